"""`pharaon keys new`: a secret key for the block factory, in a file of its own."""

from __future__ import annotations

from pathlib import Path

import click

from pharaon.cli.app import Group, app, fail

keys_app = Group("keys", help="The vendor's and operator's secret keys.", no_args_is_help=True)
app.add_command(keys_app)


@keys_app.command("new")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The key file to create (mode 0600).",
)
def new_command(out: Path) -> None:
    """Write a fresh 32-byte key to a new file and print its commitment (SHA-256 of the key),
    the value a block's manifest will carry."""
    from pharaon.pool.keys import SeedKeyError, commitment, new_key, write_key_file

    key = new_key()
    try:
        write_key_file(out, key)
    except SeedKeyError as exc:
        fail(str(exc))
    click.echo(f"wrote {out} (mode 0600); commitment {commitment(key)}")
