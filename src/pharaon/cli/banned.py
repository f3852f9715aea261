"""``banned load`` and ``banned check``: the ministry's banned-gamblers list (« interdits de
jeux », service/banned.py, docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

import click

from pharaon.cli.app import Group, app, fail
from pharaon.cli.database import database_for, database_url_option, settings_for
from pharaon.cli.operators import acting, as_operator_option

banned_app = Group(
    "banned",
    help="The banned-gamblers list (interdits de jeux): load it, check the players against it.",
    no_args_is_help=True,
)
app.add_command(banned_app)

REFUSED = 1  # a list file refused: nothing changed


@banned_app.command("load")
@click.argument(
    "file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The list as CSV (UTF-8, header last_name,first_names,birth_date).",
)
@as_operator_option
@database_url_option
def banned_load(file: Path, as_email: str | None, database_url: str | None) -> None:
    """Replace the banned-gamblers list by FILE, in one transaction.

    FILE is CSV in UTF-8 with the header line last_name,first_names,birth_date, then one
    person a line: last name, first names (as on the list), birth date as YYYY-MM-DD. A file
    with a wrong header, an empty name or a bad date is refused (exit 1, its line named) and
    the list in force stays. The load is an audit record (banned_list_loaded: the counts and
    the file's SHA-256, no name); the players are checked against the new list at the
    server's next hourly look, or at once by `pharaon banned check`.
    """
    from pharaon.service import banned
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import InvalidError

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}", REFUSED)
    try:
        listed = banned.read_list(data)
    except InvalidError as exc:
        fail(f"{file}: {exc.detail}", REFUSED)
    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=True)
        entries = db.write(banned.load, listed=listed, actor=actor, now=utcnow())
    click.echo(f"banned-gamblers list loaded: {entries} people ({listed.rows} lines)")
    click.echo(f"  sha256: {listed.sha256}")


@banned_app.command("check")
@as_operator_option
@database_url_option
def banned_check(as_email: str | None, database_url: str | None) -> None:
    """Check every verified player against the list now (the server also does it daily):
    those on it are suspended, once each, and shown to operators as banned."""
    from pharaon.service import banned
    from pharaon.service.clock import utcnow

    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=True)
        found = db.write(banned.check_players, actor=actor, now=utcnow())
    if found is None:
        fail("no banned-gamblers list: load one with `pharaon banned load FILE`", REFUSED)
    players = ", ".join(str(p) for p in found) or "none"
    click.echo(f"players newly found on the banned-gamblers list and suspended: {players}")
