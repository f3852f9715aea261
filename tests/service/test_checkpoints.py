"""Checkpoints of the audit chain: taken at block load and daily, published, and the audit
fails when the chain no longer passes through one; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, func, insert, select, text, update

from pharaon.cli import app
from pharaon.service import audit, checkpoints
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.tables import (
    GENESIS_HASH,
    AuditCheckpoint,
    AuditHead,
    AuditRecord,
    AuditTreeChunk,
    AuditTreeHead,
)
from tests.conftest import BlockLoader, Player


def _rewrite_chain(engine: Engine, *, changed_seq: int) -> None:
    """What a forger with the database would do: rewrite every record from scratch, one of
    them changed, each hash recomputed, and the head moved: the chain is consistent again."""
    with make_sessionmaker(engine)() as session:
        records = session.execute(select(AuditRecord).order_by(AuditRecord.seq)).scalars().all()
        rows: list[dict[str, Any]] = [
            {
                "seq": r.seq,
                "created_at": r.created_at,
                "kind": r.kind,
                "actor": r.actor if r.seq != changed_seq else "operator:forger",
                "payload": r.payload,
            }
            for r in records
        ]
        session.expunge_all()
        if engine.dialect.name == "sqlite":
            session.execute(text("DROP TRIGGER audit_log_no_delete"))
        else:
            session.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"))
        session.execute(delete(AuditRecord))
        prev = GENESIS_HASH
        for row in rows:
            digest = audit.record_hash(prev_sha256=prev, **row)
            session.execute(insert(AuditRecord).values(prev_sha256=prev, sha256=digest, **row))
            prev = digest
        session.execute(update(AuditHead).values(seq=rows[-1]["seq"], sha256=prev))
        session.commit()


def _audit(engine: Engine, published: tuple[tuple[int, str], ...] = ()) -> audit.AuditReport:
    with make_sessionmaker(engine)() as session:
        return audit.run_audit(connection=session.connection(), published=published)


def test_a_block_load_takes_a_checkpoint_which_is_published(
    client: TestClient, engine: Engine, load: BlockLoader
) -> None:
    # The server takes its daily one at start, on the empty chain: waited for before anything
    # is appended (its chores run beside the first requests).
    until = time.monotonic() + 30
    while not client.get("/api/v1/audit/checkpoints").json():
        assert time.monotonic() < until, "no checkpoint taken at start"
        time.sleep(0.05)
    player = Player(client, "ana@example.org")
    load(100)
    player.deposit(500)
    player.play(100, "auto")
    load(200)
    r = client.get("/api/v1/audit/checkpoints")
    assert r.status_code == 200, r.text
    found = r.json()
    # each load (the fixture's) approved at once by an auditor: a checkpoint each
    assert [c["why"] for c in found] == [
        "daily",
        "block_loaded",
        "block_approved",
        "block_loaded",
        "block_approved",
    ]
    with make_sessionmaker(engine)() as session:
        head = audit.head(connection=session.connection())
        hashes = {
            int(seq): str(digest)
            for seq, digest in session.execute(select(AuditRecord.seq, AuditRecord.sha256))
        }
    assert found[0]["seq"] == 0
    assert (found[-1]["seq"], found[-1]["sha256"]) == head
    assert found[1]["sha256"] == hashes[found[1]["seq"]]
    assert all(set(c) == {"seq", "sha256", "taken_at", "why", "root"} for c in found)
    assert all(c["root"] is not None for c in found)  # each with its tree's root
    assert _audit(engine).ok


def test_the_daily_checkpoint_is_taken_once_a_day(engine: Engine, load: BlockLoader) -> None:
    load(100)
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        for hours, taken in ((0, False), (23, False), (25, True), (26, False)):  # load's, fresh
            assert checkpoints.take_if_due(session, now=now + timedelta(hours=hours)) is taken
            session.commit()
        reasons = session.execute(
            select(AuditCheckpoint.reason).order_by(AuditCheckpoint.id)
        ).scalars()
        assert list(reasons) == ["block_loaded", "block_approved", "daily"]


def test_a_rewritten_chain_is_caught_by_its_checkpoints(
    tmp_path: Path, database_url: str, engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(100)
    player.deposit(500)
    for _ in range(3):
        player.play(100, "auto")
    assert _audit(engine).ok
    runner = CliRunner()
    result = runner.invoke(app, ["audit", "--head", "--database-url", database_url])
    with make_sessionmaker(engine)() as session:
        seq, digest = audit.head(connection=session.connection())
    assert (result.exit_code, result.stdout) == (
        0,
        f"audit chain head: seq {seq} sha256 {digest}\n",
    )
    published = tmp_path / "checkpoints.json"
    published.write_text(json.dumps(player.client.get("/api/v1/audit/checkpoints").json()))

    with make_sessionmaker(engine)() as session:
        loaded = session.execute(
            select(AuditRecord.seq).where(AuditRecord.kind == "block_loaded")
        ).scalar_one()
    _rewrite_chain(engine, changed_seq=loaded)  # the block_loaded record: a checkpoint
    report = _audit(engine)
    assert not report.ok
    assert report.failures == [
        f"audit chain intact: record {loaded} is not the published checkpoint at that "
        "sequence: the chain was rewritten"
    ]
    result = runner.invoke(app, ["audit", "--database-url", database_url])
    assert result.exit_code == 1
    assert "the chain was rewritten" in result.stderr
    # Even with the stored checkpoints and the log's tree gone too, a copy kept outside
    # catches it.
    with make_sessionmaker(engine)() as session:
        session.execute(delete(AuditCheckpoint))
        session.execute(delete(AuditTreeChunk))
        session.execute(update(AuditTreeHead).values(size=0))
        session.commit()
    assert _audit(engine).ok  # without any checkpoint, the forgery would pass
    result = runner.invoke(
        app, ["audit", "--database-url", database_url, "--checkpoints", str(published)]
    )
    assert result.exit_code == 1
    assert "the chain was rewritten" in result.stderr
    published.write_text("{not json")
    result = runner.invoke(
        app, ["audit", "--database-url", database_url, "--checkpoints", str(published)]
    )
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1


def test_servers_due_together_take_one_daily_checkpoint(engine: Engine, load: BlockLoader) -> None:
    """Two servers (two engines, as two processes have) find the daily checkpoint due at the
    same moment: one takes it, the other then finds it taken."""
    load(100)
    later = utcnow() + timedelta(days=2)
    other = make_engine(engine.url.render_as_string(hide_password=False))
    barrier = threading.Barrier(2)

    def due(e: Engine) -> bool:
        with make_sessionmaker(e)() as session:
            barrier.wait(10)
            taken = checkpoints.take_if_due(session, now=later)
            time.sleep(0.2)  # held, so the other waits on the head's lock
            session.commit()
            return taken

    try:
        with ThreadPoolExecutor(2) as pool:
            taken = list(pool.map(due, (engine, other)))
    finally:
        other.dispose()
    assert sorted(taken) == [False, True]
    with make_sessionmaker(engine)() as session:
        daily = session.execute(
            select(func.count()).where(AuditCheckpoint.reason == "daily")
        ).scalar_one()
    assert daily == 1
