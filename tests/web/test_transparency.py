"""The audit log as a transparency log over HTTP: the signed checkpoint and its key, inclusion
and consistency proofs that hold against it, witnesses' cosignatures received and published;
a rewritten history refused by a witness and by ``pharaon audit --checkpoints``. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, update

from pharaon.cli import app
from pharaon.pool import notes, tlog
from pharaon.pool.witness import ProofFetcher, RefusedError, Witnessed, judge
from pharaon.service import receipts, transparency
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditCheckpoint, AuditCosignature, AuditTreeChunk, AuditTreeHead
from tests.conftest import BlockLoader, Player
from tests.service.test_checkpoints import _rewrite_chain

WITNESS = notes.Signer("regulator.example/witness", bytes(range(32, 64)), kind=notes.COSIGNATURE_V1)
STRANGER = notes.Signer("stranger.example/w", bytes(range(1, 33)), kind=notes.COSIGNATURE_V1)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    transparency.load(settings.keys_dir, settings.log_origin, create=True)
    receipts.load(settings.keys_dir, create=True)
    return settings.model_copy(update={"witness_keys": WITNESS.verifier.vkey})


def _log_key(client: TestClient) -> notes.Verifier:
    r = client.get("/api/v1/audit/key")
    assert r.status_code == 200, r.text
    key = notes.parse_vkey(r.json()["verifier_key"])
    assert r.json()["origin"] == key.name == "pharaon/audit-log"
    return key


def _consistency(client: TestClient) -> ProofFetcher:
    def fetch(first: int, second: int) -> list[bytes]:
        r = client.get(
            "/api/v1/audit/proofs/consistency", params={"first": first, "second": second}
        )
        assert r.status_code == 200, r.text
        return [bytes.fromhex(h) for h in r.json()["proof"]]

    return fetch


def _witness(client: TestClient, last: Witnessed | None) -> Witnessed | None:
    note = client.get("/api/v1/audit/checkpoint").text
    return judge(
        note,
        log_key=_log_key(client),
        signer=WITNESS,
        last=last,
        consistency=_consistency(client),
        now=1_800_000_000,
    )


def test_the_signed_checkpoint_and_its_proofs_hold(
    client: TestClient, load: BlockLoader, player: Player
) -> None:
    load(100)
    player.deposit(1_000)
    for _ in range(5):
        assert player.play(100).status_code == 201
    load(200)
    key = _log_key(client)
    r = client.get("/api/v1/audit/checkpoint")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    note = notes.parse(r.text)
    notes.verify(note, key)
    checkpoint = notes.parse_checkpoint(note.text)
    listed = client.get("/api/v1/audit/checkpoints").json()
    assert (listed[-1]["seq"], listed[-1]["root"]) == (checkpoint.size, checkpoint.root.hex())
    first = listed[1]  # the first block's load
    size = checkpoint.size
    for seq in (1, first["seq"], size):
        r = client.get("/api/v1/audit/proofs/inclusion", params={"seq": seq, "tree_size": size})
        assert r.status_code == 200, r.text
        got = r.json()
        leaf = tlog.leaf_hash(bytes.fromhex(got["record_sha256"]))
        assert got["leaf_hash"] == leaf.hex()
        assert got["leaf_index"] == seq - 1
        proof = [bytes.fromhex(h) for h in got["proof"]]
        assert tlog.verify_inclusion(leaf, seq - 1, size, proof, checkpoint.root)
    proof = _consistency(client)(first["seq"], size)
    assert tlog.verify_consistency(
        first["seq"], size, bytes.fromhex(first["root"]), checkpoint.root, proof
    )
    older = client.get("/api/v1/audit/checkpoint", params={"size": first["seq"]})
    assert notes.parse_checkpoint(notes.parse(older.text).text).root.hex() == first["root"]
    for path, params in (
        ("/audit/proofs/inclusion", {"seq": 1, "tree_size": size + 1}),
        ("/audit/proofs/inclusion", {"seq": size + 1, "tree_size": size}),
        ("/audit/proofs/consistency", {"first": size, "second": size - 1}),
        ("/audit/checkpoint", {"size": size + 1}),
    ):
        r = client.get("/api/v1" + path, params=params)
        assert r.status_code == 404, (path, params, r.text)
        assert r.json()["error"] == "not_found"
    r = client.get("/api/v1/audit/proofs/inclusion", params={"seq": 0, "tree_size": 1})
    assert r.status_code == 422


def test_a_witness_cosigns_and_the_server_publishes_it(
    client: TestClient, load: BlockLoader, player: Player
) -> None:
    load(100)
    witnessed = _witness(client, None)
    assert witnessed is not None
    bad = witnessed.note.replace(WITNESS.verifier.name, STRANGER.verifier.name)
    r = client.post("/api/v1/audit/cosignatures", json={"note": bad})
    assert r.status_code == 422
    assert "no cosignature of a witness" in r.json()["detail"]
    stranger = notes.parse(client.get("/api/v1/audit/checkpoint").text)
    stranger_note = str(stranger.with_signatures(STRANGER.cosign(stranger.text, 1)))
    r = client.post("/api/v1/audit/cosignatures", json={"note": stranger_note})
    assert r.status_code == 422
    r = client.post("/api/v1/audit/cosignatures", json={"note": witnessed.note})
    assert r.status_code == 201, r.text
    assert r.json() == {"tree_size": witnessed.size, "witnesses": [WITNESS.verifier.name]}
    assert client.post("/api/v1/audit/cosignatures", json={"note": witnessed.note}).status_code == (
        201
    )  # again: kept once
    published = notes.parse(client.get("/api/v1/audit/checkpoint").text)
    assert notes.verify(published, WITNESS.verifier).timestamp == 1_800_000_000
    assert len(published.signatures) == 2
    # A cosignature of a changed checkpoint: not this log's.
    forged = witnessed.note.replace(f"\n{witnessed.size}\n", f"\n{witnessed.size + 1}\n")
    r = client.post("/api/v1/audit/cosignatures", json={"note": forged})
    assert r.status_code == 422
    assert "not a checkpoint of this log" in r.json()["detail"]
    # The log grows; the witness cosigns the next checkpoint from the proof.
    player.deposit(500)
    player.play(100)
    load(200)
    second = _witness(client, witnessed)
    assert second is not None
    assert second.size > witnessed.size


def test_without_witness_keys_no_cosignature_is_taken(
    engine: Engine, settings: Settings, load: BlockLoader
) -> None:
    from pharaon.web.app import create_app

    load(100)
    with TestClient(
        create_app(settings.model_copy(update={"witness_keys": ""}), engine=engine)
    ) as c:
        witnessed = _witness(c, None)
        assert witnessed is not None
        r = c.post("/api/v1/audit/cosignatures", json={"note": witnessed.note})
    assert r.status_code == 403
    assert "PHARAON_WITNESS_KEYS" in r.json()["detail"]


def forge_history(engine: Engine, load: BlockLoader) -> None:
    """What an operator rewriting its log would do: every record rewritten (one changed), the
    hashes, the tree and the checkpoints made again, so that the database agrees with itself;
    then a block loaded, whose checkpoint the server signs."""
    _rewrite_chain(engine, changed_seq=2)
    with make_sessionmaker(engine).begin() as session:
        session.execute(delete(AuditTreeChunk))
        session.execute(update(AuditTreeHead).values(size=0))
        session.execute(delete(AuditCosignature))
        session.execute(delete(AuditCheckpoint))
    load(200, number=7)


def _check_proof(client: TestClient, player: Player, sold: dict[str, Any], folder: Path) -> str:
    """``pharaon check-proof`` of the play ``sold`` (the purchase's answer) against its
    receipt, as the player would run it; its output line."""
    proof, receipt = folder / "proof.json", folder / "receipt.json"
    proof.write_text(json.dumps(player.get(f"/plays/{sold['play_id']}/proof").json()))
    receipt.write_text(json.dumps(sold))
    key = client.get("/api/v1/receipts/key").json()["public_key"]
    result = CliRunner().invoke(
        app, ["check-proof", str(proof), "--receipt", str(receipt), "--receipt-key", key]
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_play_its_receipt_and_proof_then_a_rewritten_history_refused_by_witness_and_audit(
    *,
    tmp_path: Path,
    client: TestClient,
    database_url: str,
    settings: Settings,
    engine: Engine,
    load: BlockLoader,
    player: Player,
) -> None:
    load(100)
    player.deposit(1_000)
    sold = player.play(100, "auto")
    assert sold.status_code == 201, sold.text
    assert sold.json()["receipt"] is not None
    held = _check_proof(client, player, sold.json(), tmp_path)
    assert held.startswith(
        f"good proof: play {sold.json()['play_id']}: unit {sold.json()['serial']} "
    ), held
    load(300)
    witnessed = _witness(client, None)
    assert witnessed is not None
    kept = tmp_path / "witnessed.txt"
    kept.write_text(witnessed.note)
    runner = CliRunner(env={"PHARAON_KEYS_DIR": str(settings.keys_dir)})
    result = runner.invoke(
        app, ["audit", "--database-url", database_url, "--checkpoints", str(kept)]
    )
    assert result.exit_code == 0, result.output
    assert "ok    transparency log consistent" in result.stdout

    forge_history(engine, load)
    with pytest.raises(RefusedError, match="the log's history was rewritten"):
        _witness(client, witnessed)
    result = runner.invoke(
        app, ["audit", "--database-url", database_url, "--checkpoints", str(kept)]
    )
    assert result.exit_code == 1
    assert "the signed checkpoint of" in result.stderr
    assert "the log was rewritten" in result.stderr
    # The player's evidence stands on the block's root, not on the log: it still holds.
    assert _check_proof(client, player, sold.json(), tmp_path) == held
    # A checkpoint not signed by the log's key is refused before the log is read.
    other = notes.Signer("pharaon/audit-log", bytes(range(2, 34))).verifier.vkey
    result = runner.invoke(
        app,
        ["audit", "--database-url", database_url, "--checkpoints", str(kept), "--log-key", other],
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("pharaon: error: bad signed checkpoint: note 1: the note is")
    assert result.stderr.count("\n") == 1
