"""``pharaon check-proof --receipt`` (cli/proofs.py): a true proof held against the true signed
receipt of its sale passes; the same proof saying another play, block, emission, block number,
price, unit or root than the receipt signed is refused, in one line naming the field, the
receipt's value and the proof's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from pharaon.cli import app
from pharaon.game.evaluate import evaluate
from pharaon.game.unit import parse_ticket
from pharaon.pool.merkle import audit_path, leaf_hash, merkle_root
from pharaon.service import receipts

TICKET = "PYOXJSPYOXJSPYOX-YOXJSPYOXJSPYOXJ-OXJSPYOXJSPYOXJS-XJSPYOXJSPYOXJSP"
# Three units, the tickets of docs/proofs.md's test vector with their symbols turned.
TICKETS = [TICKET, TICKET.translate(str.maketrans("PYOXJS", "YOXJSP")), TICKET[::-1]]
SIGNER = receipts.Signer(bytes(range(32)))


def _proof(tickets: list[str], serial: int, **block: Any) -> dict[str, Any]:
    """The true proof of unit ``serial`` of the block of ``tickets`` (in sale order) at 1 €,
    as ``GET /api/v1/plays/{id}/proof`` answers it for play 12 of block 3 (E1 n° 1)."""
    lots = [evaluate(parse_ticket(ticket), 100).prize_cents for ticket in tickets]
    leaves = np.array(
        [
            list(leaf_hash(n, t, lot))
            for n, (t, lot) in enumerate(zip(tickets, lots, strict=True), 1)
        ],
        dtype=np.uint8,
    )
    identity = {"emission": "E1", "price_cents": 100, "block_number": 1} | block
    return {
        "play_id": 12,
        "block_id": 3,
        "game": "pharaon",
        **identity,
        "block_size": len(tickets),
        "serial": serial,
        "ticket": tickets[serial - 1],
        "lot_cents": lots[serial - 1],
        "path": [{"side": s, "hash": h} for s, h in audit_path(leaves, serial - 1)],
        "merkle_root": merkle_root(leaves),
    }


def _receipt_of(proof: dict[str, Any]) -> dict[str, str]:
    """The signed receipt of the sale of ``proof``'s play, as the purchase answered it."""
    sold = receipts.Sold(
        play_id=proof["play_id"],
        block_id=proof["block_id"],
        emission=proof["emission"],
        block_number=proof["block_number"],
        price_cents=proof["price_cents"],
        serial=proof["serial"],
        time=datetime(2026, 12, 6, 1, 2, 3, tzinfo=UTC),
        merkle_root=proof["merkle_root"],
    )
    receipt = SIGNER.receipt(sold)
    return {"text": receipt.text, "signature": receipt.signature}


def _check(tmp_path: Path, proof: dict[str, Any], receipt: dict[str, str]) -> tuple[int, str, str]:
    (tmp_path / "proof.json").write_text(json.dumps(proof))
    (tmp_path / "purchase.json").write_text(json.dumps({"play_id": 12, "receipt": receipt}))
    result = CliRunner().invoke(
        app,
        [
            "check-proof",
            str(tmp_path / "proof.json"),
            "--receipt",
            str(tmp_path / "purchase.json"),
            "--receipt-key",
            SIGNER.public_key,
        ],
    )
    return result.exit_code, result.stdout, result.stderr


def test_a_true_proof_passes_with_its_receipt(tmp_path: Path) -> None:
    proof = _proof(TICKETS, 3)
    code, out, err = _check(tmp_path, proof, _receipt_of(proof))
    assert (code, err) == (0, ""), err
    assert out == (
        f"good proof: play 12: unit 3 (lot 0,00 €) is in the block of Merkle root "
        f"{proof['merkle_root']}, as the receipt of 2026-12-06T01:02:03+00:00 signed\n"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("block_id", 4),
        ("block_number", 2),
        ("emission", "E2"),
        ("price_cents", 200),  # the ticket wins nothing at 2 € either: the proof still holds
        ("play_id", 13),
    ],
)
def test_a_proof_saying_another_sale_than_its_receipt_is_refused(
    tmp_path: Path, field: str, value: object
) -> None:
    proof = _proof(TICKETS, 3)
    receipt = _receipt_of(proof)
    proof[field] = value
    assert _check(tmp_path, proof, _receipt_of(proof))[0] == 0  # a true proof on its own
    code, out, err = _check(tmp_path, proof, receipt)
    said, shown = json.dumps(_proof(TICKETS, 3)[field]), json.dumps(value)
    assert (code, out) == (1, "")
    assert err == (
        f"pharaon: error: the proof is not the receipt's sale: "
        f"the receipt signed {field} {said}, the proof says {shown}\n"
    )


def test_the_true_proof_of_another_unit_or_block_is_refused(tmp_path: Path) -> None:
    receipt = _receipt_of(_proof(TICKETS, 3))
    code, _, err = _check(tmp_path, _proof(TICKETS, 2), receipt)  # unit 2 of the same block
    assert code == 1
    assert err.endswith("the receipt signed serial 3, the proof says 2\n")
    other = _proof([TICKETS[1], TICKETS[0], TICKETS[2]], 3)  # unit 3 of another block
    code, _, err = _check(tmp_path, other, receipt)
    assert code == 1
    assert err.count("\n") == 1
    assert "the receipt signed merkle_root " in err
    assert "Traceback" not in err
