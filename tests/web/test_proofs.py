"""Published commitments (``GET /blocks``) and a proof per play (``GET /plays/{id}/proof``),
checked by ``pharaon check-proof``; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, update

from pharaon.cli import app
from pharaon.game.unit import Unit
from pharaon.pool.merkle import audit_path, leaf_hash, verify_proof
from pharaon.service.proofs import path_nodes
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Block, MerkleChunk, UnitRow
from tests.conftest import BlockLoader, Player


def _check(path: Path, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["check-proof", str(path), *extra])
    return result.exit_code, result.stdout, result.stderr


def test_blocks_are_published_without_a_session(
    client: TestClient, engine: Engine, load: BlockLoader
) -> None:
    first = load(100, size=40)
    second = load(300, size=40, number=2)
    with make_sessionmaker(engine)() as session:
        manifest = json.loads(
            session.execute(select(Block.manifest_json).where(Block.id == second)).scalar_one()
        )
        manifest["vendor_key_commitment"] = "ab" * 32
        manifest["operator_key_commitment"] = "cd" * 32
        session.execute(
            update(Block).where(Block.id == second).values(manifest_json=json.dumps(manifest))
        )
        rows = {b.id: b for b in session.execute(select(Block)).scalars()}
        session.commit()
    r = client.get("/api/v1/blocks")
    assert r.status_code == 200, r.text
    found = r.json()
    assert [b["block_id"] for b in found] == [first, second]
    for b in found:
        row = rows[b["block_id"]]
        assert (b["emission"], b["block_number"], b["price_cents"], b["block_size"]) == (
            row.emission,
            row.block_number,
            row.price_cents,
            40,
        )
        assert (b["merkle_root"], b["units_sha256"], b["state"]) == (
            row.merkle_root,
            row.units_sha256,
            row.state,
        )
        assert b["loaded_at"]
        assert b["test"] is True
    with make_sessionmaker(engine)() as session:
        made = json.loads(
            session.execute(select(Block.manifest_json).where(Block.id == first)).scalar_one()
        )
    assert len(made["vendor_key_commitment"]) == 64  # the factory's, as generated
    assert found[0]["vendor_key_commitment"] == made["vendor_key_commitment"]
    assert found[0]["operator_key_commitment"] == made["operator_key_commitment"]
    assert found[1]["vendor_key_commitment"] == "ab" * 32
    assert found[1]["operator_key_commitment"] == "cd" * 32


def test_path_nodes_match_the_factorys_audit_path() -> None:
    for size in (1, 2, 3, 5, 8, 13, 33):
        leaves = np.random.default_rng(size).integers(0, 256, (size, 32), dtype=np.uint8)
        for serial in range(1, size + 1):
            sides = [side for _, _, side in path_nodes(size, serial)]
            assert sides == [side for side, _ in audit_path(leaves, serial - 1)]


def test_a_finished_play_has_a_proof_of_its_block(
    tmp_path: Path, engine: Engine, load: BlockLoader, player: Player, other: Player
) -> None:
    load(200, size=37)  # odd levels: some nodes go up without a sibling
    player.deposit(5_000)
    plays = [player.play(200, "auto").json() for _ in range(20)]
    root = player.client.get("/api/v1/blocks").json()[0]["merkle_root"]
    for play in plays:
        r = player.get(f"/plays/{play['play_id']}/proof")
        assert r.status_code == 200, r.text
        proof = r.json()
        assert (proof["serial"], proof["ticket"], proof["lot_cents"]) == (
            play["serial"],
            play["ticket"],
            play["prize_cents"],
        )
        assert proof["merkle_root"] == root
        path = [(s["side"], s["hash"]) for s in proof["path"]]
        assert verify_proof(root, proof["serial"], proof["ticket"], proof["lot_cents"], path)
    # Another's play is not found; the route needs a session.
    pid = plays[0]["play_id"]
    assert other.get(f"/plays/{pid}/proof").status_code == 404
    assert player.client.get(f"/api/v1/plays/{pid}/proof").status_code == 401
    # check-proof: good, tampered (one hex digit of the path, of the lot), malformed.
    proof = player.get(f"/plays/{pid}/proof").json()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(proof))
    code, out, _ = _check(good)
    assert code == 0
    assert out.count("\n") == 1
    assert "good proof" in out
    assert _check(good, "--root", root)[0] == 0
    code, _, err = _check(good, "--root", "0" * 64)
    assert code == 1
    assert "not the published" in err
    step = proof["path"][2]
    step["hash"] = ("0" if step["hash"][0] != "0" else "1") + step["hash"][1:]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(proof))
    code, out, err = _check(bad)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert "not in the block" in err
    proof = player.get(f"/plays/{pid}/proof").json()
    proof["lot_cents"] += 100
    bad.write_text(json.dumps(proof))
    code, _, err = _check(bad)
    assert code == 1
    assert "lot_cents" in err
    for text in ("{not json", "[]", json.dumps({"serial": "1"})):
        bad.write_text(text)
        code, out, err = _check(bad)
        assert (code != 0, out, err.count("\n")) == (True, "", 1), text
        assert "Traceback" not in err
    code, _, err = _check(tmp_path / "missing.json")
    assert code == 2
    assert "cannot read" in err


def test_an_unfinished_jouer_play_has_no_proof_yet(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(100)
    player.deposit(100)
    pid = player.play(100, "jouer").json()["play_id"]
    for grid in (1, 2, 3):
        player.post(f"/plays/{pid}/reveal", {"grid": grid})
        r = player.get(f"/plays/{pid}/proof")
        assert (r.status_code, r.json()["error"]) == (409, "conflict")
    player.post(f"/plays/{pid}/reveal", {"grid": 4})
    proof = player.get(f"/plays/{pid}/proof").json()
    assert proof["ticket"] == player.get(f"/plays/{pid}").json()["ticket"]


def test_the_tree_is_stored_at_load(engine: Engine, load: BlockLoader) -> None:
    block_id = load(100, size=600)  # levels of 600, 300, 150, ...: 3 chunks for the leaves
    with make_sessionmaker(engine)() as session:
        rows = session.execute(
            select(MerkleChunk.level, MerkleChunk.chunk, MerkleChunk.hashes)
            .where(MerkleChunk.block_id == block_id)
            .order_by(MerkleChunk.level, MerkleChunk.chunk)
        ).all()
    leaves = b"".join(h for level, _, h in rows if level == 0)
    assert len(leaves) == 600 * 32
    assert [c for level, c, _ in rows if level == 0] == [0, 1, 2]
    assert max(level for level, _, _ in rows) == 9  # 600 leaves: 10 levels below the root
    with make_sessionmaker(engine)() as session:
        cells, lot = session.execute(
            select(UnitRow.cells, UnitRow.lot_cents).where(
                UnitRow.block_id == block_id, UnitRow.serial == 7
            )
        ).one()
    assert leaves[6 * 32 : 7 * 32] == leaf_hash(7, Unit(tuple(cells)).ticket, lot)
