"""A sale's signed receipt (issue 28, item 3; service/receipts.py), on both databases: the
purchase answers it, signed by the key ``GET /receipts/key`` publishes; a retry answers the
same; ``pharaon check-proof --receipt`` holds the later proof against it and refuses another
play's receipt, a changed one, or one another key signed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pharaon.service import receipts
from pharaon.service.receipts import Receipt, ReceiptError
from pharaon.settings import Settings
from pharaon.web.app import create_app
from tests.conftest import BlockLoader, Player


def _check(proof: Path, *extra: str) -> tuple[int, str, str]:
    from pharaon.cli import app

    result = CliRunner().invoke(app, ["check-proof", str(proof), *extra])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    """The app over a key folder holding the receipts' key, as the first start makes it."""
    assert receipts.load(settings.keys_dir, create=True) is not None
    with TestClient(create_app(settings, engine=engine)) as client:
        yield client


def test_without_the_key_a_server_sells_without_receipts(
    engine: Engine, settings: Settings, load: BlockLoader
) -> None:
    load(100, size=30)
    with TestClient(create_app(settings, engine=engine)) as bare:
        player = Player(bare, "ana@example.org")
        player.deposit(500)
        sold = player.play(100, "auto")
        assert (sold.status_code, sold.json()["receipt"]) == (201, None)
        assert bare.get("/api/v1/receipts/key").status_code == 404
    assert not (settings.keys_dir / receipts.KEY_FILE).exists()


def test_a_purchase_answers_its_signed_receipt(
    client: TestClient, load: BlockLoader, player: Player, tmp_path: Path
) -> None:
    block_id = load(100, size=30)
    player.deposit(1_000)
    key = client.get("/api/v1/receipts/key").json()  # no session needed
    assert (key["algorithm"], key["format"]) == ("Ed25519", receipts.FORMAT)
    first = player.play(100, "auto", key="one").json()
    again = player.play(100, "auto", key="one").json()  # a retry: the same play, same receipt
    assert again["receipt"] == first["receipt"]
    sold = receipts.check(Receipt(**first["receipt"]), key["public_key"])
    root = client.get("/api/v1/blocks").json()[0]["merkle_root"]
    assert (sold.play_id, sold.block_id, sold.serial, sold.merkle_root) == (
        first["play_id"],
        block_id,
        first["serial"],
        root,
    )
    assert (sold.emission, sold.block_number, sold.price_cents) == ("E1", 1, 100)
    assert sold.time.isoformat() == first["created_at"].replace("Z", "+00:00")

    second = player.play(100, "auto").json()
    proof = tmp_path / "proof.json"
    proof.write_text(json.dumps(player.get(f"/plays/{first['play_id']}/proof").json()))
    kept = tmp_path / "receipt.json"
    kept.write_text(json.dumps(first))  # the purchase's whole answer, as the page keeps it
    code, out, err = _check(proof, "--receipt", str(kept), "--receipt-key", key["public_key"])
    assert code == 0, err
    assert out.endswith(f"as the receipt of {sold.time.isoformat()} signed\n")

    other = tmp_path / "other.json"
    other.write_text(json.dumps(second["receipt"]))
    code, out, err = _check(proof, "--receipt", str(other), "--receipt-key", key["public_key"])
    assert (code, out) == (1, "")
    assert err.startswith("pharaon: error: the proof is not the receipt's sale")

    changed = dict(first["receipt"])
    changed["text"] = changed["text"].replace(f"play_id {first['play_id']}\n", "play_id 999999\n")
    assert changed["text"] != first["receipt"]["text"]
    other.write_text(json.dumps(changed))
    code, _, err = _check(proof, "--receipt", str(other), "--receipt-key", key["public_key"])
    assert code == 1
    assert "signature is not the receipt key's" in err
    code, _, err = _check(proof, "--receipt", str(kept))
    assert (code, err) == (2, "pharaon: error: give both --receipt and --receipt-key, or neither\n")


def _sold(**changes: object) -> receipts.Sold:
    fields: dict[str, Any] = {
        "play_id": 7,
        "block_id": 2,
        "emission": "E1",
        "block_number": 1,
        "price_cents": 100,
        "serial": 1234,
        "time": datetime(2026, 12, 6, 1, 2, 3, tzinfo=UTC),
        "merkle_root": "ab" * 32,
    }
    return receipts.Sold(**{**fields, **changes})


def test_a_receipt_holds_only_under_its_key() -> None:
    signer = receipts.Signer(bytes(range(32)))
    stranger = receipts.Signer(bytes(range(1, 33)))
    sold = _sold()
    receipt = signer.receipt(sold)
    assert receipts.check(receipt, signer.public_key) == sold
    assert receipt.text == (
        "pharaon/receipt/v2\nplay_id 7\nblock_id 2\nemission E1\nblock_number 1\n"
        f"price_cents 100\nserial 1234\ntime 2026-12-06T01:02:03+00:00\nmerkle_root {'ab' * 32}\n"
    )
    with pytest.raises(ReceiptError, match="signature"):
        receipts.check(receipt, stranger.public_key)
    with pytest.raises(ReceiptError, match="base64"):
        receipts.check(receipt, "not base64!")
    forged = stranger.receipt(sold)
    with pytest.raises(ReceiptError, match="signature"):
        receipts.check(Receipt(receipt.text, forged.signature), signer.public_key)
    # Signed, but not a receipt's text.
    raw = signer._key.sign(b"hello\n")
    odd = Receipt("hello\n", base64.b64encode(raw).decode())
    with pytest.raises(
        ReceiptError, match="not a pharaon/receipt/v2 or pharaon/receipt/v1 receipt"
    ):
        receipts.check(odd, signer.public_key)
    with pytest.raises(ValueError, match="every field"):
        signer.receipt(_sold(emission=None))


def test_a_v1_receipt_is_still_read_and_held_to_what_it_signed() -> None:
    """A receipt from before the block's emission, number and price were signed."""
    signer = receipts.Signer(bytes(range(32)))
    text = (
        "pharaon/receipt/v1\nplay 7\nblock 2\nserial 1234\n"
        f"time 2026-12-06T01:02:03+00:00\nroot {'ab' * 32}\n"
    )
    signature = base64.b64encode(signer._key.sign(text.encode())).decode()
    sold = receipts.check(Receipt(text, signature), signer.public_key)
    assert sold == _sold(emission=None, block_number=None, price_cents=None)
    proof = {
        "play_id": 7,
        "block_id": 2,
        "emission": "E9",
        "block_number": 9,
        "price_cents": 300,
        "serial": 1234,
        "merkle_root": "ab" * 32,
    }
    assert receipts.disagreement(sold, proof) is None  # it signed no emission, number or price
    proof["block_id"] = 3
    assert receipts.disagreement(sold, proof) == "the receipt signed block_id 2, the proof says 3"


def test_a_proof_must_say_every_field_its_receipt_signed() -> None:
    sold = _sold()
    proof: dict[str, Any] = {name: getattr(sold, name) for name in receipts.PROOF_FIELDS} | {
        "ticket": "…",
        "path": [],
    }
    assert receipts.disagreement(sold, proof) is None
    for name, other in [
        ("play_id", 8),
        ("block_id", 3),
        ("emission", "E2"),
        ("block_number", 2),
        ("price_cents", 200),
        ("serial", 1235),
        ("merkle_root", "cd" * 32),
        ("block_id", "2"),  # the same number, but not as the receipt signed it
        ("block_id", True),
        ("price_cents", 100.0),
    ]:
        said = receipts.disagreement(sold, {**proof, name: other})
        assert said is not None, (name, other)
        assert said.startswith(f"the receipt signed {name} {json.dumps(getattr(sold, name))}, ")
        assert said.endswith(f"the proof says {json.dumps(other)}")
    assert receipts.disagreement(sold, {k: v for k, v in proof.items() if k != "serial"}) == (
        "the receipt signed serial 1234, the proof says missing"
    )
