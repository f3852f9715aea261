"""`pharaon check-proof`: check a play's proof offline."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pharaon.cli.app import app, fail
from pharaon.game.money import format_cents
from pharaon.pool.proofcheck import ProofError, check_proof


@app.command("check-proof")
@click.argument(
    "file",
    type=click.Path(path_type=Path),
    help="The JSON that GET /api/v1/plays/{id}/proof returned.",
)
@click.option("--root", help="The block's Merkle root as published (GET /api/v1/blocks).")
def check_proof_command(file: Path, root: str | None) -> None:
    """Check that a play's unit belongs to its block: exit 0 and one line, or 1 and why not."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{file} is not JSON: {exc}")
    try:
        checked = check_proof(data, root=root)
    except ProofError as exc:
        fail(f"bad proof: {exc}", code=1)
    play = "" if checked.play_id is None else f"play {checked.play_id}: "
    click.echo(
        f"good proof: {play}unit {checked.serial} (lot {format_cents(checked.lot_cents)}) "
        f"is in the block of Merkle root {checked.merkle_root}"
    )
