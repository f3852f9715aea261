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
    assert (sold.play_id, sold.block_id, sold.serial, sold.root) == (
        first["play_id"],
        block_id,
        first["serial"],
        root,
    )
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
    changed["text"] = changed["text"].replace(f"play {first['play_id']}\n", "play 999999\n")
    assert changed["text"] != first["receipt"]["text"]
    other.write_text(json.dumps(changed))
    code, _, err = _check(proof, "--receipt", str(other), "--receipt-key", key["public_key"])
    assert code == 1
    assert "signature is not the receipt key's" in err
    code, _, err = _check(proof, "--receipt", str(kept))
    assert (code, err) == (2, "pharaon: error: give both --receipt and --receipt-key, or neither\n")


def test_a_receipt_holds_only_under_its_key() -> None:
    signer = receipts.Signer(bytes(range(32)))
    stranger = receipts.Signer(bytes(range(1, 33)))
    sold = receipts.Sold(7, 2, 1234, datetime(2026, 12, 6, 1, 2, 3, tzinfo=UTC), "ab" * 32)
    receipt = signer.receipt(sold)
    assert receipts.check(receipt, signer.public_key) == sold
    assert receipt.text == (
        "pharaon/receipt/v1\nplay 7\nblock 2\nserial 1234\n"
        f"time 2026-12-06T01:02:03+00:00\nroot {'ab' * 32}\n"
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
    with pytest.raises(ReceiptError, match="not a pharaon/receipt/v1 receipt"):
        receipts.check(odd, signer.public_key)
