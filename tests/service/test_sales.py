"""The sale of a batch (``sales.sell``), on SQLite and PostgreSQL: several orders in one
transaction, each refused one undone alone, serials in order across a block's end and with no
gap within its runs, a stake equal to the balance sold and one a cent short refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

from pharaon.game.modes import Mode
from pharaon.service import limits, wallet
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    IdempotencyConflictError,
    InsufficientFundsError,
    InvalidError,
    SelfExcludedError,
    ServiceError,
    SoldOutError,
)
from pharaon.service.orders import Order
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    Account,
    AuditRecord,
    Block,
    IdempotencyKey,
    LedgerEntry,
    LedgerTransaction,
    PlayRow,
    SaleRun,
    StakeHour,
)
from tests.conftest import BlockLoader, load_for_sale, make_block
from tests.service.helpers import Outcome, buy, funded_player

Open = Callable[[], Session]


@pytest.fixture
def sessions(engine: Engine) -> Open:
    return make_sessionmaker(engine)


def _buy(sessions: Open, orders: list[Order]) -> list[Outcome]:
    return buy(sessions, orders)


def _balance(sessions: Open, player_id: int) -> int:
    with sessions() as session:
        return wallet.balance(session=session, player_id=player_id)


def _audit_ok(sessions: Open) -> None:
    with sessions() as session:
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures


def _plays(outcomes: list[Outcome]) -> list[PlayView]:
    assert all(isinstance(o, PlayView) for o in outcomes), outcomes
    return [o for o in outcomes if isinstance(o, PlayView)]


def test_a_batch_sells_consecutive_units(sessions: Open, load: BlockLoader) -> None:
    load(100, size=50)
    load(300, size=50)
    buyers = [funded_player(sessions, f"p{n}", 1_000) for n in range(6)]
    orders = [
        Order(b, 300 if n % 2 else 100, Mode.AUTO if n < 3 else Mode.JOUER, f"k{n}")
        for n, b in enumerate(buyers)
    ]
    plays = _plays(_buy(sessions, orders))
    assert [p.stake_cents for p in plays] == [o.stake_cents for o in orders]
    assert sorted(p.serial for p in plays if p.stake_cents == 100) == [1, 2, 3]
    assert sorted(p.serial for p in plays if p.stake_cents == 300) == [1, 2, 3]
    assert len({p.play_id for p in plays}) == 6
    for buyer, order, play in zip(buyers, orders, plays, strict=True):
        assert play.finished == (order.mode == "auto")
        assert play.balance_before_cents == 1_000
        lot = play.prize_cents if play.finished else None
        expected = _balance(sessions, buyer)
        if lot is not None:
            assert play.balance_after_cents == expected == 1_000 - order.stake_cents + lot
    _audit_ok(sessions)


def test_each_play_of_a_batch_has_its_own_transaction_key_and_audit_record(
    sessions: Open, load: BlockLoader
) -> None:
    """The rows a batch inserts together come back in no promised order: each play is matched
    to its sale by its unit, and gets its own ledger transaction, key and audit record."""
    load(100, size=50)
    buyers = [funded_player(sessions, f"p{n}", 1_000) for n in range(8)]
    plays = _plays(_buy(sessions, [Order(b, 100, Mode.AUTO, f"k{b}") for b in buyers]))
    with sessions() as session:
        for buyer, play in zip(buyers, plays, strict=True):
            row = session.get_one(PlayRow, play.play_id)
            assert (row.player_id, row.serial, row.prize_cents) == (
                buyer,
                play.serial,
                play.prize_cents,
            )
            account = session.execute(
                select(Account.id).where(Account.player_id == buyer)
            ).scalar_one()
            entries = session.execute(
                select(LedgerEntry.account_id, LedgerEntry.amount_cents).where(
                    LedgerEntry.transaction_id == row.transaction_id
                )
            ).all()
            mine = sorted(amount for account_id, amount in entries if account_id == account)
            assert mine == sorted(a for a in (-100, play.prize_cents) if a)
            key = session.execute(
                select(IdempotencyKey.result_id).where(
                    IdempotencyKey.player_id == buyer, IdempotencyKey.key == f"k{buyer}"
                )
            ).scalar_one()
            assert key == play.play_id
            record = session.execute(
                select(AuditRecord.payload).where(
                    AuditRecord.kind == "purchase",
                    AuditRecord.actor == f"player:{buyer}",
                )
            ).scalar_one()
            assert json.loads(record)["play_id"] == play.play_id
            assert json.loads(record)["transaction_id"] == row.transaction_id
    _audit_ok(sessions)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_on_sqlite_a_batch_inserts_each_table_s_rows_in_one_statement(
    engine: Engine, sessions: Open, load: BlockLoader
) -> None:
    """The driver gives up the GIL at each step of a statement, and the writer then waits to
    get it back while it holds the writer lock: rows are inserted together, not one by one."""
    load(100, size=50)
    buyers = [funded_player(sessions, f"p{n}", 1_000) for n in range(6)]
    inserts: list[str] = []
    one_by_one: list[str] = []

    def seen(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if statement.startswith("INSERT"):
            inserts.append(statement.split()[2])

    def executemany(_cursor: Any, statement: str, *_: Any) -> None:
        one_by_one.append(statement.split()[2])

    event.listen(engine, "before_cursor_execute", seen)
    event.listen(engine.dialect, "do_executemany", executemany)
    try:
        _plays(_buy(sessions, [Order(b, 100, Mode.AUTO, "k") for b in buyers]))
    finally:
        event.remove(engine, "before_cursor_execute", seen)
        event.remove(engine.dialect, "do_executemany", executemany)
    assert sorted(inserts) == sorted(set(inserts)), inserts  # one INSERT per table
    assert {"plays", "ledger_transactions", "ledger_entries", "audit_log"} <= set(inserts)
    assert not [s for s in one_by_one if s in inserts], one_by_one  # none an executemany


def _everything(sessions: Open) -> dict[str, Any]:
    """What a sale may change: every balance, the rows of each table a sale writes to, the
    runs' next serials."""
    with sessions() as session:
        counts = {
            table.__tablename__: session.execute(select(func.count()).select_from(table)).scalar()
            for table in (PlayRow, LedgerTransaction, LedgerEntry, IdempotencyKey, AuditRecord)
        }
        rows = {
            "balances": select(Account.id, Account.balance_cents).order_by(Account.id),
            "stake_hours": select(
                StakeHour.player_id, StakeHour.hour, StakeHour.stakes_cents
            ).order_by(StakeHour.player_id, StakeHour.hour),
            "runs": select(SaleRun.block_id, SaleRun.run, SaleRun.next_serial).order_by(
                SaleRun.block_id, SaleRun.run
            ),
        }
        return {**counts, **{name: session.execute(q).all() for name, q in rows.items()}}


def test_a_stake_equal_to_the_balance_sells_a_cent_short_does_not(
    sessions: Open, load: BlockLoader
) -> None:
    """The balance may pay the stake to the last cent: with exactly 3 € a 3 € stake is sold
    (the balance then 0, plus the lot); with 2.99 € it is refused and nothing changes."""
    block = load(300, size=50)
    short = funded_player(sessions, "short", 299)
    exact = funded_player(sessions, "exact", 300)
    before = _everything(sessions)
    [refused] = _buy(sessions, [Order(short, 300, Mode.AUTO, "k")])
    assert isinstance(refused, InsufficientFundsError), refused
    assert (refused.code, refused.detail) == (
        "insufficient_funds",
        "the balance is less than the stake of 300 cents",
    )
    assert _everything(sessions) == before
    [sold] = _plays(_buy(sessions, [Order(exact, 300, Mode.AUTO, "k")]))
    assert (sold.block_id, sold.serial) == (block, 1)  # the refusal took no unit
    assert sold.prize_cents is not None
    assert (sold.balance_before_cents, sold.balance_after_cents) == (300, sold.prize_cents)
    assert _balance(sessions, exact) == 0 + sold.prize_cents
    _audit_ok(sessions)


@pytest.mark.parametrize("sale_runs", [1, 3])
def test_purchases_take_each_run_s_serials_in_order_with_no_gap(
    engine: Engine, sessions: Open, sale_runs: int
) -> None:
    """Sold one after another (alone or in a batch, none beside them), the units go run by
    run, each run from its first serial to its last, none skipped: the purchases' serials
    are the runs' bounds laid end to end, in the order bought."""
    block = load_for_sale(engine, make_block(100, size=24), sale_runs=sale_runs)
    with sessions() as session:
        bounds = session.execute(
            select(SaleRun.first_serial, SaleRun.last_serial).order_by(SaleRun.run)
        ).all()
    order = [serial for first, last in bounds for serial in range(first, last + 1)]
    assert len(bounds) == sale_runs
    assert sorted(order) == list(range(1, 25))
    regular = funded_player(sessions, "regular", 10_000)
    buyers = [funded_player(sessions, f"b{n}", 1_000) for n in range(4)]

    def one_by_one(count: int, key: str) -> list[int]:
        outcomes = [
            _buy(sessions, [Order(regular, 100, Mode.AUTO, f"{key}{n}")]) for n in range(count)
        ]
        return [p.serial for o in outcomes for p in _plays(o)]

    assert one_by_one(5, "a") == order[:5]
    batch = _plays(_buy(sessions, [Order(b, 100, Mode.AUTO, "k") for b in buyers]))
    assert [p.serial for p in batch] == order[5:9]  # with 3 runs, across the first's end
    assert one_by_one(15, "b") == order[9:]
    assert {p.block_id for p in batch} == {block}
    with sessions() as session:
        ends = session.execute(
            select(SaleRun.next_serial, SaleRun.last_serial).order_by(SaleRun.run)
        ).all()
        assert all(next_serial == last + 1 for next_serial, last in ends), ends
        assert session.get_one(Block, block).state == "sold_out"
    _audit_ok(sessions)


def test_refused_orders_change_nothing_and_the_others_sell(
    sessions: Open, load: BlockLoader
) -> None:
    load(100, size=50)
    rich, poor, excluded, fine = (
        funded_player(sessions, n, d)
        for n, d in (("rich", 1_000), ("poor", 50), ("out", 1_000), ("ok", 500))
    )
    with sessions() as session, session.begin():
        limits.self_exclude(session=session, player_id=excluded, days=7, now=utcnow())
    orders = [
        Order(rich, 100, Mode.AUTO, "a"),
        Order(poor, 100, Mode.AUTO, "b"),
        Order(excluded, 100, Mode.AUTO, "c"),
        Order(fine, 250, Mode.AUTO, "d"),
        Order(fine, 100, "sideways", "e"),  # type: ignore[arg-type]  # unchecked caller
        Order(fine, 100, Mode.AUTO, None),
    ]
    outcomes = _buy(sessions, orders)
    assert isinstance(outcomes[0], PlayView)
    assert outcomes[0].serial == 1
    assert isinstance(outcomes[1], InsufficientFundsError)
    assert isinstance(outcomes[2], SelfExcludedError)
    assert isinstance(outcomes[3], InvalidError)
    assert isinstance(outcomes[4], InvalidError)
    assert isinstance(outcomes[5], ServiceError)
    assert outcomes[5].code == "bad_request"
    assert _balance(sessions, poor) == 50
    assert _balance(sessions, excluded) == 1_000
    with sessions() as session:
        keys = session.execute(select(IdempotencyKey.key).order_by(IdempotencyKey.key)).scalars()
        assert [k for k in keys if k != "first"] == ["a"]  # the refused gave their keys back
    # The refused key is free again: once funded, the same key buys.
    with sessions() as session:
        wallet.deposit(
            session=session, player_id=poor, amount_cents=100, idempotency_key="more", now=utcnow()
        )
        session.commit()
    (again,) = _plays(_buy(sessions, [Order(poor, 100, Mode.AUTO, "b")]))
    assert again.serial == 2
    _audit_ok(sessions)


def test_a_block_that_sells_out_in_a_batch_opens_the_next(
    sessions: Open, load: BlockLoader
) -> None:
    first = load(100, size=16)
    second = load(100, size=16, number=2)
    regular = funded_player(sessions, "regular", 10_000)
    # 14 units of the first block go one by one (a player's orders are sold one at a time).
    _plays(_buy(sessions, [Order(regular, 100, Mode.AUTO, f"r{n}") for n in range(14)]))
    buyers = [funded_player(sessions, f"b{n}", 1_000) for n in range(5)]
    outcomes = _buy(sessions, [Order(b, 100, Mode.AUTO, "k") for b in buyers])
    sold = [(p.block_id, p.serial) for p in _plays(outcomes)]
    assert sold == [(first, 15), (first, 16), (second, 1), (second, 2), (second, 3)]
    _plays(_buy(sessions, [Order(regular, 100, Mode.AUTO, f"s{n}") for n in range(12)]))
    outcomes = _buy(sessions, [Order(b, 100, Mode.AUTO, "last") for b in buyers[:3]])
    assert isinstance(outcomes[0], PlayView)
    assert (outcomes[0].block_id, outcomes[0].serial) == (second, 16)
    assert all(isinstance(o, SoldOutError) for o in outcomes[1:])
    for buyer in buyers[1:3]:  # refunded in the same transaction
        assert _balance(sessions, buyer) == 1_000 - 100 + _lots(sessions, buyer)
    with sessions() as session:
        states = {int(i): state for i, state in session.execute(select(Block.id, Block.state))}
        assert states == {first: "sold_out", second: "sold_out"}
        assert session.execute(select(func.count()).select_from(PlayRow)).scalar_one() == 32
    _audit_ok(sessions)


def _lots(sessions: Open, player_id: int) -> int:
    with sessions() as session:
        return int(
            session.execute(
                select(func.coalesce(func.sum(PlayRow.prize_cents), 0)).where(
                    PlayRow.player_id == player_id
                )
            ).scalar_one()
        )


def test_a_retry_in_the_same_batch_replays_the_first(sessions: Open, load: BlockLoader) -> None:
    load(100, size=50)
    buyer = funded_player(sessions, "twice", 1_000)
    outcomes = _buy(
        sessions,
        [
            Order(buyer, 100, Mode.AUTO, "same"),
            Order(buyer, 100, Mode.AUTO, "same"),
            Order(buyer, 100, Mode.AUTO, "other"),
            Order(buyer, 200, Mode.AUTO, "same"),
        ],
    )
    one, retry, other = _plays(outcomes[:3])
    assert retry.play_id == one.play_id
    assert other.play_id != one.play_id
    assert isinstance(outcomes[3], IdempotencyConflictError)
    with sessions() as session:
        assert session.execute(select(func.count()).select_from(PlayRow)).scalar_one() == 2
    # A later retry, in another batch, replays too.
    (later,) = _plays(_buy(sessions, [Order(buyer, 100, Mode.AUTO, "same")]))
    assert later.play_id == one.play_id
    _audit_ok(sessions)
