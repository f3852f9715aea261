"""The audit: clean after real traffic, and it names what fails when the books are tampered."""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from sqlalchemy import Connection, Engine, delete, insert, select, text, update
from sqlalchemy.exc import DBAPIError

from pharaon.game.modes import Mode
from pharaon.service.audit import run_audit
from pharaon.service.orders import Order
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    GENESIS_HASH,
    SALES_ACCOUNT,
    Account,
    AuditHead,
    AuditRecord,
    LedgerEntry,
    PlayRow,
    SaleRun,
    UnitRow,
)
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader, Player
from tests.service.helpers import buy, funded_player


def _failures(engine: Engine) -> list[str]:
    with make_sessionmaker(engine)() as session:
        return run_audit(connection=session.connection()).failures


def _documented_hash(
    *, prev_sha256: str, seq: int, created_at: datetime, kind: str, actor: str, payload: str
) -> str:
    """A record's hash as the audit log documents it (service/audit.py, tables.AuditRecord),
    written out here rather than called: the SHA-256 (hex) of the previous record's hash, the
    sequence number, the time (ISO 8601), the kind, the actor and the payload, joined by
    newlines, in UTF-8."""
    text = "\n".join([prev_sha256, str(seq), created_at.isoformat(), kind, actor, payload])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _allow_rewrites(conn: Connection) -> None:
    """Take the audit log's append-only trigger away, as whoever holds the database can."""
    if conn.dialect.name == "sqlite":
        conn.execute(text("DROP TRIGGER audit_log_no_update"))
    else:
        conn.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"))


@pytest.fixture
def traffic(load: BlockLoader, player: Player, other: Player) -> None:
    load(100, size=30)
    load(200, size=30)
    for who in (player, other):
        who.deposit(2_000)
        for stake in (100, 200, 100):
            assert who.play(stake).status_code == 201


@pytest.mark.usefixtures("traffic")
def test_clean_after_traffic(engine: Engine) -> None:
    assert _failures(engine) == []


@pytest.mark.usefixtures("traffic")
def test_a_balance_off_its_ledger(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(update(Account).where(Account.id == SALES_ACCOUNT).values(balance_cents=1))
    [failure] = _failures(engine)
    assert failure.startswith("balances equal ledgers: account 2")


@pytest.mark.usefixtures("traffic")
def test_an_unbalanced_ledger(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(insert(LedgerEntry).values(transaction_id=1, account_id=1, amount_cents=5))
    failures = _failures(engine)
    assert any(f.startswith("ledger balances") for f in failures)


@pytest.mark.usefixtures("traffic")
def test_a_unit_sold_without_its_play(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(SaleRun)
            .where(SaleRun.block_id == 1, SaleRun.run == 0)
            .values(next_serial=SaleRun.next_serial + 1)
        )
    [failure] = _failures(engine)
    assert failure.startswith("one play per sold unit: block 1")


@pytest.mark.usefixtures("traffic")
def test_a_play_whose_lot_is_not_its_units(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(UnitRow)
            .where(UnitRow.block_id == 1, UnitRow.serial == 1)
            .values(lot_cents=UnitRow.lot_cents + 1)
        )
    assert any(f.startswith("play lots equal unit lots") for f in _failures(engine))


@pytest.mark.usefixtures("traffic")
def test_a_missing_unit(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(delete(UnitRow).where(UnitRow.block_id == 2, UnitRow.serial == 30))
    assert any(f.startswith("sold + unsold = block size") for f in _failures(engine))


@pytest.mark.usefixtures("traffic")
def test_the_audit_log_is_append_only(engine: Engine) -> None:
    with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
        conn.execute(text("UPDATE audit_log SET payload = '{}' WHERE seq = 2"))
    with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_log WHERE seq = 2"))
    assert _failures(engine) == []


@pytest.mark.usefixtures("traffic")
def test_a_broken_chain(engine: Engine) -> None:
    with engine.begin() as conn:
        _allow_rewrites(conn)
        conn.execute(text("UPDATE audit_log SET payload = '{}' WHERE seq = 3"))
    [failure] = _failures(engine)
    assert failure == "audit chain intact: record 3 does not match its hash"


@pytest.mark.usefixtures("traffic")
def test_each_record_s_hash_covers_the_previous_record_s(engine: Engine) -> None:
    """Every stored hash, recomputed from the documented formula from the first record on,
    with the genesis hash before it: each record names the hash before it and is hashed
    with it, and the head is the last."""
    with engine.connect() as conn:
        records = conn.execute(select(AuditRecord).order_by(AuditRecord.seq)).all()
        head = tuple(conn.execute(select(AuditHead.seq, AuditHead.sha256)).one())
    assert len(records) > 10
    prev = GENESIS_HASH
    stored, recomputed = [], []
    for r in records:
        stored.append((r.seq, r.prev_sha256, r.sha256))
        digest = _documented_hash(
            prev_sha256=prev,
            seq=r.seq,
            created_at=r.created_at,
            kind=r.kind,
            actor=r.actor,
            payload=r.payload,
        )
        recomputed.append((r.seq, prev, digest))
        prev = digest
    assert stored == recomputed
    assert [seq for seq, _, _ in stored] == list(range(1, len(records) + 1))
    assert head == (len(records), prev)


@pytest.mark.usefixtures("traffic")
def test_a_rewritten_record_with_its_hash_recomputed_breaks_the_next(engine: Engine) -> None:
    """An attacker rewrites a purchase's lot, recomputes that record's hash with the
    documented formula and patches the next record's ``prev_sha256`` to it: the rewritten
    record now checks on its own, but the next one's hash covered the old one, so the audit
    names the next record."""
    with engine.connect() as conn:
        purchases = conn.execute(
            select(AuditRecord)
            .where(AuditRecord.kind == "purchase")
            .order_by(AuditRecord.seq.desc())
            .limit(2)
        ).all()
        last = conn.execute(select(AuditHead.seq)).scalar_one()
    record = purchases[1]  # the last purchase but one: a record follows it
    assert record.seq < last
    payload = json.loads(record.payload)
    payload["lot_cents"] += 10_000
    forged = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    assert forged != record.payload
    digest = _documented_hash(
        prev_sha256=record.prev_sha256,
        seq=record.seq,
        created_at=record.created_at,
        kind=record.kind,
        actor=record.actor,
        payload=forged,
    )
    with engine.begin() as conn:
        _allow_rewrites(conn)
        conn.execute(
            update(AuditRecord)
            .where(AuditRecord.seq == record.seq)
            .values(payload=forged, sha256=digest)
        )
        conn.execute(
            update(AuditRecord).where(AuditRecord.seq == record.seq + 1).values(prev_sha256=digest)
        )
    [failure] = _failures(engine)
    assert failure == f"audit chain intact: record {record.seq + 1} does not match its hash"


@pytest.mark.usefixtures("traffic")
def test_a_forged_head(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(update(AuditHead).values(seq=AuditHead.seq - 1))
    [failure] = _failures(engine)
    assert failure.startswith("audit chain intact: head says")


@pytest.mark.usefixtures("traffic")
def test_a_play_of_an_unsold_unit(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(update(PlayRow).where(PlayRow.id == 1).values(serial=29))
    failures = _failures(engine)
    assert any(f.startswith("one play per sold unit") for f in failures)


def test_clean_while_sales_go_on(engine: Engine, db: Transactions, load: BlockLoader) -> None:
    """The audit reads one snapshot (the reader's): run again and again during a burst of
    purchases by 8 buyers, every run is clean (read at moments apart, the units sold and the
    plays, the head and the log, would disagree)."""
    load(100, size=2_000)
    sessions = make_sessionmaker(engine)
    buyers = [funded_player(sessions, f"load{n}", 100_000) for n in range(8)]
    done = threading.Event()

    def buy_on(player_id: int) -> int:
        sold = 0
        while not done.is_set():
            orders = [Order(player_id, 100, Mode.AUTO, secrets.token_hex(8))]
            outcomes = buy(sessions, orders)
            assert all(isinstance(o, PlayView) for o in outcomes), outcomes
            sold += 1
        return sold

    reports = []
    with ThreadPoolExecutor(len(buyers)) as pool:
        futures = [pool.submit(buy_on, b) for b in buyers]
        try:
            for _ in range(15):
                reports.append(db.read(run_audit))
        finally:
            done.set()
        sold = sum(f.result() for f in futures)
    assert sold > 0
    failures = [r.failures for r in reports if not r.ok]
    assert not failures, failures
