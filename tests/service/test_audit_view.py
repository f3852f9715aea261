"""The audit log as the back office reads it (service/audit_view.py), on both databases: pages
newest first, filtered by kind and by actor, with the total of the filtered records."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import Engine, select

from pharaon.service import audit_view, limits, wallet
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import funded_player

Line = tuple[int, str, str]  # seq, kind, actor


@pytest.fixture
def history(engine: Engine, db: Transactions, load: BlockLoader) -> dict[str, int]:
    """A block loaded, two players' deposits, a deposit limit and a self-exclusion: the
    players' ids."""
    load(100, size=20)
    sessions = make_sessionmaker(engine)
    ids = {name: funded_player(sessions, name, 0) for name in ("ana", "bob")}
    now = utcnow()
    for n in range(3):
        for name, player_id in ids.items():
            db.write(
                wallet.deposit,
                player_id=player_id,
                amount_cents=100 + n,
                idempotency_key=f"{name}{n}",
                now=now + timedelta(seconds=n),
            )
    db.write(
        limits.set_limits,
        player_id=ids["ana"],
        changes={"daily": 5_000, "weekly": 10**9, "monthly": None},  # the moderator, kept
        now=now,
    )
    db.write(limits.self_exclude, player_id=ids["bob"], days=1, now=now)
    return ids


def _all(db: Transactions) -> list[Line]:
    """Every record, newest first, as the table holds it."""
    return db.read(
        lambda connection: [
            (int(seq), kind, actor)
            for seq, kind, actor in connection.execute(
                select(AuditRecord.seq, AuditRecord.kind, AuditRecord.actor).order_by(
                    AuditRecord.seq.desc()
                )
            )
        ]
    )


def _page(db: Transactions, **query: int | str | None) -> tuple[int, list[Line]]:
    page = db.read(audit_view.audit_page, **query)
    return page.total, [(line.seq, line.kind, line.actor) for line in page.lines]


def test_pages_newest_first(db: Transactions, history: dict[str, int]) -> None:
    records = _all(db)
    assert len(records) >= 9  # the block's, six deposits, the limit, the exclusion
    assert _page(db) == (len(records), records)
    assert _page(db, limit=3) == (len(records), records[:3])
    assert _page(db, offset=3, limit=3) == (len(records), records[3:6])
    assert _page(db, offset=len(records)) == (len(records), [])
    [newest] = db.read(audit_view.audit_page, limit=1).lines
    assert newest.kind == "self_exclusion"
    assert json.loads(newest.payload)["player_id"] == history["bob"]


def test_a_line_is_its_record(db: Transactions, history: dict[str, int]) -> None:
    stored = db.read(
        lambda connection: [
            audit_view.AuditLine(int(seq), created_at, kind, actor, payload, sha256)
            for seq, created_at, kind, actor, payload, sha256 in connection.execute(
                select(
                    AuditRecord.seq,
                    AuditRecord.created_at,
                    AuditRecord.kind,
                    AuditRecord.actor,
                    AuditRecord.payload,
                    AuditRecord.sha256,
                ).order_by(AuditRecord.seq.desc())
            )
        ]
    )
    page = db.read(audit_view.audit_page, limit=100)
    assert list(page.lines) == stored
    deposits = [json.loads(line.payload) for line in page.lines if line.kind == "deposit"]
    assert sorted(d["amount_cents"] for d in deposits) == [100, 100, 101, 101, 102, 102]


def test_filtered_by_kind_and_by_actor(db: Transactions, history: dict[str, int]) -> None:
    records = _all(db)
    ana, bob = (f"player:{history[n]}" for n in ("ana", "bob"))
    deposits = [r for r in records if r[1] == "deposit"]
    assert len(deposits) == 6
    assert _page(db, kind="deposit") == (6, deposits)  # not "deposit_limits": the kind exactly
    # Each player's moderators (with stake_limits), then ana's daily limit.
    assert _page(db, kind="deposit_limits") == (3, [r for r in records if r[1] == "deposit_limits"])
    # With its opening and its moderators.
    assert _page(db, actor=bob) == (7, [r for r in records if r[2] == bob])
    assert _page(db, actor=ana)[0] == 7
    total, lines = _page(db, kind="deposit", actor=ana, limit=2)
    assert (total, lines) == (3, [r for r in deposits if r[2] == ana][:2])
    assert _page(db, kind="self_exclusion", actor=ana) == (0, [])
    assert _page(db, kind="block_loaded", actor="test")[0] == 1
    # An empty filter is no filter.
    assert _page(db, kind="", actor="") == (len(records), records)
