"""`pharaon check-proof`: check a play's proof offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pharaon.cli.app import app, fail
from pharaon.game.money import format_cents
from pharaon.pool.proofcheck import ProofError, check_proof
from pharaon.service import receipts


@app.command("check-proof")
@click.argument(
    "file",
    type=click.Path(path_type=Path),
    help="The JSON that GET /api/v1/plays/{id}/proof returned.",
)
@click.option("--root", help="The block's Merkle root as published (GET /api/v1/blocks).")
@click.option(
    "--receipt",
    type=click.Path(path_type=Path),
    help="The sale's receipt as the purchase answered it (its 'receipt': text and signature).",
)
@click.option(
    "--receipt-key",
    help="The receipts' public key, base64 (GET /api/v1/receipts/key); needed with --receipt.",
)
def check_proof_command(
    file: Path, root: str | None, receipt: Path | None, receipt_key: str | None
) -> None:
    """Check that a play's unit belongs to its block, and with --receipt that the proof is the
    sale the signed receipt names (its play, block, emission, block number, price, unit and
    root): exit 0 and one line, or 1 and why not."""
    if (receipt is None) != (receipt_key is None):
        fail("give both --receipt and --receipt-key, or neither")
    data = _json(file)
    try:
        checked = check_proof(data, root=root)
    except ProofError as exc:
        fail(f"bad proof: {exc}", code=1)
    play = "" if checked.play_id is None else f"play {checked.play_id}: "
    held = ""
    if receipt is not None and receipt_key is not None:
        sold = _receipt(_json(receipt), receipt_key)
        differs = receipts.disagreement(sold, data)
        if differs is not None:
            fail(f"the proof is not the receipt's sale: {differs}", code=1)
        held = f", as the receipt of {sold.time.isoformat()} signed"
    click.echo(
        f"good proof: {play}unit {checked.serial} (lot {format_cents(checked.lot_cents)}) "
        f"is in the block of Merkle root {checked.merkle_root}{held}"
    )


def _json(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{file} is not JSON: {exc}")


def _receipt(data: Any, public_key: str) -> receipts.Sold:
    """What the receipt ``data`` (a purchase's answer, or its ``receipt``) says, signature
    checked; exit 1 if it does not hold."""
    if isinstance(data, dict) and isinstance(data.get("receipt"), dict):
        data = data["receipt"]
    if not (
        isinstance(data, dict)
        and isinstance(data.get("text"), str)
        and isinstance(data.get("signature"), str)
    ):
        fail("bad receipt: not an object with 'text' and 'signature'", code=1)
    try:
        return receipts.check(receipts.Receipt(data["text"], data["signature"]), public_key)
    except receipts.ReceiptError as exc:
        fail(f"bad receipt: {exc}", code=1)
