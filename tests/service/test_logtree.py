"""The audit log's stored Merkle tree (service/logtree.py): extended at each checkpoint, by
pieces of any size, it gives the roots and proofs of the reference tree at every size, reads
a few nodes for them, and the audit holds it and the signed roots against the log; on SQLite
and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Connection, Engine, delete, event, select, update

from pharaon.pool import tlog
from pharaon.service import audit, checkpoints, logtree
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditCheckpoint, AuditRecord, AuditTreeChunk
from tests.service.test_checkpoints import _rewrite_chain


def _append(engine: Engine, n: int) -> None:
    with make_sessionmaker(engine).begin() as session:
        audit.append_many(
            session, records=[("test", "test", {"i": i}) for i in range(n)], now=utcnow()
        )


def _take(engine: Engine) -> checkpoints.Checkpoint:
    with make_sessionmaker(engine).begin() as session:
        return checkpoints.take(session, reason="daily", now=utcnow())


def _leaves(engine: Engine) -> list[bytes]:
    with engine.connect() as conn:
        rows = conn.execute(select(AuditRecord.sha256).order_by(AuditRecord.seq)).scalars()
        return [tlog.leaf_hash(bytes.fromhex(h)) for h in rows]


def test_the_stored_tree_is_the_reference_tree_at_every_size(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logtree, "_BATCH", 100)  # an extension in several steps, unaligned
    sizes = []
    for n in (0, 1, 1, 254, 1, 300, 43, 257, 3):  # across chunk boundaries, levels 0..10
        _append(engine, n)
        taken = _take(engine)
        sizes.append(taken.seq)
        assert taken.root == tlog.root(_leaves(engine)).hex()
    leaves = _leaves(engine)
    assert len(leaves) == 860
    with engine.connect() as conn:
        assert logtree.stored_size(connection=conn) == 860
        for size in [*range(0, 40), 255, 256, 257, 511, 512, 513, 859, 860]:
            root = logtree.root(connection=conn, tree_size=size)
            assert root == tlog.root(leaves[:size]), size
        for size, seq in ((860, 1), (860, 513), (860, 860), (257, 257), (1, 1), (300, 77)):
            digest, proof = logtree.inclusion(connection=conn, seq=seq, tree_size=size)
            assert tlog.leaf_hash(bytes.fromhex(digest)) == leaves[seq - 1]
            root = tlog.root(leaves[:size])
            assert tlog.verify_inclusion(leaves[seq - 1], seq - 1, size, proof, root)
        for first, second in ((0, 860), (1, 860), (256, 860), (257, 513), (599, 860), (5, 5)):
            proof = logtree.consistency(connection=conn, first=first, second=second)
            assert tlog.verify_consistency(
                first, second, tlog.root(leaves[:first]), tlog.root(leaves[:second]), proof
            )
        with pytest.raises(NotFoundError, match=r"tree_size must be 0\.\.860"):
            logtree.root(connection=conn, tree_size=861)
        with pytest.raises(NotFoundError, match=r"seq must be 1\.\.5"):
            logtree.inclusion(connection=conn, seq=6, tree_size=5)
        with pytest.raises(NotFoundError, match="first must be"):
            logtree.consistency(connection=conn, first=7, second=5)
        # Every level's rows hold its complete nodes: 860 leaves, 430 pairs, ...
        stored = {level: len(b"".join(rows)) // 32 for level, rows in _levels(conn).items()}
    assert stored == {level: 860 >> level for level in range(10)}


def _levels(conn: Connection) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for level, hashes in conn.execute(
        select(AuditTreeChunk.level, AuditTreeChunk.hashes).order_by(
            AuditTreeChunk.level, AuditTreeChunk.chunk
        )
    ):
        out.setdefault(int(level), []).append(bytes(hashes))
    return out


def test_a_proof_reads_a_few_nodes_in_one_statement(engine: Engine) -> None:
    _append(engine, 1000)
    _take(engine)
    statements: list[str] = []

    def count(*args: object) -> None:
        statements.append(str(args[2]))

    with engine.connect() as conn:
        event.listen(engine, "before_cursor_execute", count)
        try:
            _, proof = logtree.inclusion(connection=conn, seq=700, tree_size=999)
        finally:
            event.remove(engine, "before_cursor_execute", count)
    assert len(proof) == 10
    selects = [s for s in statements if s.startswith("SELECT")]
    assert len(selects) == 3  # the size, the record, the nodes


def test_the_chores_fill_the_roots_a_checkpoint_lacked(engine: Engine) -> None:
    _append(engine, 10)
    first = _take(engine)
    with make_sessionmaker(engine).begin() as session:
        session.execute(update(AuditCheckpoint).values(root=None))
    _append(engine, 5)
    with make_sessionmaker(engine).begin() as session:
        assert checkpoints.take_if_due(session, now=utcnow() + timedelta(days=2))
    with engine.connect() as conn:
        found = checkpoints.list_checkpoints(connection=conn)
        assert logtree.stored_size(connection=conn) == 15
    leaves = _leaves(engine)
    assert [(c.seq, c.root) for c in found] == [
        (first.seq, tlog.root(leaves[:10]).hex()),
        (15, tlog.root(leaves).hex()),
    ]


def test_the_audit_holds_the_tree_and_the_signed_roots_against_the_log(engine: Engine) -> None:
    _append(engine, 20)
    taken = _take(engine)
    assert taken.root is not None
    with make_sessionmaker(engine)() as session:
        report = audit.run_audit(connection=session.connection(), signed=[(20, taken.root)])
        assert report.ok, report.failures
        report = audit.run_audit(connection=session.connection(), signed=[(21, taken.root)])
        assert report.failures == [
            "transparency log consistent: the signed checkpoint of 21 records is beyond the "
            "log's records"
        ]
    # The log rewritten from record 7 on, consistently, and its checkpoints gone: the stored
    # tree, and any signed root kept outside, no longer agree with it.
    _rewrite_chain(engine, changed_seq=7)
    with make_sessionmaker(engine).begin() as session:
        session.execute(delete(AuditCheckpoint))
    with make_sessionmaker(engine)() as session:
        failures = audit.run_audit(connection=session.connection()).failures
        assert len(failures) == 1
        assert failures[0].startswith(
            "transparency log consistent: the stored tree of 20 records has root "
        )
        assert failures[0].endswith(": the log was rewritten")
