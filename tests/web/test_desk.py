"""The sales desk: purchases that arrive together are sold in one batch, each buyer gets its own
outcome, a failed batch is sold again order by order, a buyer gone before the sale buys nothing.
(Who may buy is the route's dependency, as on every route: tests/web/test_api.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.service import sale_steps, sales, sell_function, sessions, wallet
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import InsufficientFundsError
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.tables import PlayRow
from pharaon.web import desk
from tests.conftest import BlockLoader
from tests.service.helpers import another_writer, funded_player

WAIT = 60.0  # seconds: generous, the machine is shared
IDLE = timedelta(minutes=30)


@dataclass(frozen=True)
class Buyer:
    player_id: int
    token: str
    csrf_token: str

    def purchase(self) -> sales.Order:
        """One unit at 1 €."""
        return sales.Order(self.player_id, 100, Mode.AUTO, "k")


class Gate:
    """Wraps ``sales.sell_many``: records each batch's size, holds the first batch until
    opened, and fails the batches that ``fail`` says to."""

    def __init__(self, fail: Callable[[int], bool] = lambda _: False) -> None:
        self.sizes: list[int] = []
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.fail = fail
        self._real = sales.sell_many

    def __call__(
        self, *, session: Session, orders: Sequence[sales.Order], now: datetime
    ) -> list[sales.Sale]:
        self.sizes.append(len(orders))
        if len(self.sizes) == 1:
            self.entered.set()
            assert self.opened.wait(WAIT)
        if self.fail(len(orders)):
            raise RuntimeError("the database went away")
        return self._real(session=session, orders=orders, now=now)


@pytest.fixture
def factory(engine: Engine, load: BlockLoader) -> sessionmaker[Session]:
    load(100, size=50)
    return make_sessionmaker(engine)


@pytest.fixture
def buyers(factory: sessionmaker[Session]) -> list[Buyer]:
    # Logged in; the last cannot pay.
    found = []
    for n in range(5):
        player_id = funded_player(factory, f"d{n}", 50 if n == 4 else 1_000)
        with factory() as session:
            new = sessions.create(session, player_id=player_id, now=utcnow())
            session.commit()
        found.append(Buyer(player_id, new.token, new.csrf_token))
    return found


@pytest.fixture
def sales_desk(factory: sessionmaker[Session]) -> Iterator[desk.SalesDesk]:
    counter = desk.SalesDesk(factory)
    yield counter
    counter.close()


def _hold_first(
    monkeypatch: pytest.MonkeyPatch, gate: Gate, counter: desk.SalesDesk, buyer: Buyer
) -> Future[sales.SoldPlay | PlayView]:
    """Put ``gate`` in place and submit ``buyer``'s purchase, which the gate holds."""
    monkeypatch.setattr(sales, "sell_many", gate)
    first = counter.submit(buyer.purchase())
    assert gate.entered.wait(WAIT)
    return first


@dataclass(frozen=True)
class Held:
    gate: Gate
    first: Future[sales.SoldPlay | PlayView]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch, sales_desk: desk.SalesDesk, buyers: list[Buyer]) -> Held:
    """The first buyer's purchase, held in its batch until ``held.gate.opened`` is set."""
    gate = Gate()
    return Held(gate, _hold_first(monkeypatch, gate, sales_desk, buyers[0]))


def _view(outcome: sales.SoldPlay | PlayView) -> PlayView:
    return outcome.view() if isinstance(outcome, sales.SoldPlay) else outcome


def _serial(future: Future[sales.SoldPlay | PlayView], timeout: float) -> int:
    return _view(future.result(timeout)).serial


def _plays(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return int(session.execute(select(func.count()).select_from(PlayRow)).scalar_one())


def _audit_ok(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        report = run_audit(session=session)
    assert report.ok, report.failures


def test_orders_waiting_together_are_sold_in_one_batch(
    held: Held,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    gate, first = held.gate, held.first
    rest = [sales_desk.submit(b.purchase()) for b in buyers[1:]]
    gate.opened.set()
    play = _view(first.result(WAIT))
    assert play.serial == 1
    sold = [_view(f.result(WAIT)) for f in rest[:3]]
    assert [p.serial for p in sold] == [2, 3, 4]
    with pytest.raises(InsufficientFundsError):
        rest[3].result(WAIT)
    assert gate.sizes == [1, 4]
    assert _plays(factory) == 4
    _audit_ok(factory)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_orders_that_arrive_while_the_desk_waits_for_the_writer_lock_join_its_batch(
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    """The batch's transaction begins before the batch is taken: while its BEGIN waits for
    the writer lock (here another process holds it), the orders that arrive are sold in that
    batch instead of waiting for the next."""
    gate = Gate()
    gate.opened.set()
    monkeypatch.setattr(sales, "sell_many", gate)
    with another_writer(engine) as beginning:
        first = sales_desk.submit(buyers[0].purchase())
        beginning()
        rest = [sales_desk.submit(b.purchase()) for b in buyers[1:4]]
    assert sorted(_serial(f, WAIT) for f in [first, *rest]) == [1, 2, 3, 4]
    assert gate.sizes == [4]
    _audit_ok(factory)


def test_the_desk_goes_on_when_closing_a_batch_s_session_fails(
    engine: Engine, buyers: list[Buyer], factory: sessionmaker[Session]
) -> None:
    """The desk's thread is the only one that sells: an error while it gives its session back
    (a connection lost in the rollback) is logged, and the next orders are sold."""
    failures = [RuntimeError("the connection went away")]

    class FailingClose(Session):
        def close(self) -> None:
            super().close()
            if failures:
                raise failures.pop()

    counter = desk.SalesDesk(sessionmaker(engine, class_=FailingClose))
    try:
        assert _serial(counter.submit(buyers[0].purchase()), WAIT) == 1
        assert _serial(counter.submit(buyers[1].purchase()), WAIT) == 2
    finally:
        counter.close()
    assert not failures
    _audit_ok(factory)


def test_a_failed_batch_is_sold_order_by_order(
    monkeypatch: pytest.MonkeyPatch,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    gate = Gate(fail=lambda size: size > 1)
    first = _hold_first(monkeypatch, gate, sales_desk, buyers[0])
    rest = [sales_desk.submit(b.purchase()) for b in buyers[1:4]]
    gate.opened.set()
    assert _serial(first, WAIT) == 1
    assert sorted(_serial(f, WAIT) for f in rest) == [2, 3, 4]
    assert gate.sizes == [1, 3, 1, 1, 1]
    _audit_ok(factory)


def test_an_order_that_fails_alone_gets_the_error(
    monkeypatch: pytest.MonkeyPatch, sales_desk: desk.SalesDesk, buyers: list[Buyer]
) -> None:
    gate = Gate(fail=lambda _: True)
    monkeypatch.setattr(sales, "sell_many", gate)
    gate.opened.set()
    with pytest.raises(RuntimeError, match="went away"):
        sales_desk.submit(buyers[0].purchase()).result(WAIT)


def test_a_buyer_gone_before_the_sale_buys_nothing(
    held: Held,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    gate, first = held.gate, held.first
    gone = sales_desk.submit(buyers[1].purchase())
    assert gone.cancel()
    stays = sales_desk.submit(buyers[2].purchase())
    gate.opened.set()
    assert _serial(first, WAIT) == 1
    assert _serial(stays, WAIT) == 2
    assert gate.sizes == [1, 1]
    assert _plays(factory) == 2
    with factory() as session:
        assert wallet.balance(session=session, player_id=buyers[1].player_id) == 1_000


def test_a_buyer_awaiting_who_gives_up_before_the_sale_buys_nothing(
    held: Held,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    gate, first = held.gate, held.first

    async def main() -> tuple[bool, PlayView]:
        gone = asyncio.ensure_future(sales_desk.buy(buyers[1].purchase()))
        stays = asyncio.ensure_future(sales_desk.buy(buyers[2].purchase()))
        await asyncio.sleep(0.05)  # both queued behind the held batch
        gone.cancel()
        gate.opened.set()
        play = await stays
        return gone.cancelled(), play

    cancelled, play = asyncio.run(main())
    assert cancelled
    assert _serial(first, WAIT) == 1
    assert play.serial == 2
    assert gate.sizes == [1, 1]
    assert _plays(factory) == 2
    with factory() as session:
        assert wallet.balance(session=session, player_id=buyers[1].player_id) == 1_000


def test_buy_awaits_the_outcome(sales_desk: desk.SalesDesk, buyers: list[Buyer]) -> None:
    async def main() -> Any:
        return await asyncio.gather(
            sales_desk.buy(buyers[0].purchase()),
            sales_desk.buy(buyers[4].purchase()),
            return_exceptions=True,
        )

    play, refused = asyncio.run(main())
    assert isinstance(play, PlayView)
    assert isinstance(refused, InsufficientFundsError)


def test_close_sells_what_is_queued_then_refuses(
    held: Held, sales_desk: desk.SalesDesk, buyers: list[Buyer]
) -> None:
    gate, first = held.gate, held.first
    queued = sales_desk.submit(buyers[1].purchase())
    closing = threading.Thread(target=sales_desk.close)
    closing.start()
    gate.opened.set()
    closing.join(WAIT)
    assert not closing.is_alive()
    assert _serial(first, 0) == 1
    assert _serial(queued, 0) == 2
    with pytest.raises(RuntimeError, match="closed"):
        sales_desk.submit(buyers[2].purchase())


def test_max_batch_is_checked(engine: Engine, factory: sessionmaker[Session]) -> None:
    with pytest.raises(ValueError, match="max_batch must be at least 1, got 0"):
        desk.SalesDesk(factory, max_batch=0)


def _watch_the_sale(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """How each sale's connection stands as the sale begins: ("autocommit", ...) on
    PostgreSQL, ("in transaction", ...) on SQLite, in the order of the sales."""
    seen: list[tuple[str, bool]] = []

    def watched(real: Callable[..., Any]) -> Callable[..., Any]:
        def sell(session: Session, *args: Any) -> Any:
            driver = session.connection().connection.driver_connection
            if isinstance(driver, psycopg.Connection):
                seen.append(("autocommit", driver.autocommit))
            else:
                assert isinstance(driver, sqlite3.Connection)
                seen.append(("in transaction", driver.in_transaction))
            return real(session, *args)

        return sell

    monkeypatch.setattr(sell_function, "sell", watched(sell_function.sell))
    monkeypatch.setattr(sale_steps, "sell", watched(sale_steps.sell))
    return seen


def test_on_postgresql_a_batch_is_a_transaction_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
) -> None:
    """pharaon_sell is one statement: the desk runs it in autocommit (its sessions are plain
    ones: the desk decides), with no BEGIN nor COMMIT round trip. SQLite's steps share the
    writer's transaction."""
    seen = _watch_the_sale(monkeypatch)
    assert _serial(sales_desk.submit(buyers[0].purchase()), WAIT) == 1
    on_postgres = engine.dialect.name == "postgresql"
    assert seen == [("autocommit", True) if on_postgres else ("in transaction", True)]


def test_the_orders_of_a_failed_batch_are_sold_alone_as_a_batch_is(
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
    sales_desk: desk.SalesDesk,
    buyers: list[Buyer],
    factory: sessionmaker[Session],
) -> None:
    """The sessions the desk opens to sell a failed batch's orders one by one begin as its
    batches' do: in autocommit on PostgreSQL, in the writer's transaction on SQLite."""
    seen = _watch_the_sale(monkeypatch)
    gate = Gate(fail=lambda size: size > 1)
    first = _hold_first(monkeypatch, gate, sales_desk, buyers[0])
    rest = [sales_desk.submit(b.purchase()) for b in buyers[1:3]]
    gate.opened.set()
    assert sorted(_serial(f, WAIT) for f in [first, *rest]) == [1, 2, 3]
    assert gate.sizes == [1, 2, 1, 1]
    on_postgres = engine.dialect.name == "postgresql"
    assert seen == [("autocommit", True) if on_postgres else ("in transaction", True)] * 3
    _audit_ok(factory)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_the_desk_s_autocommit_is_given_back_with_its_connection(
    monkeypatch: pytest.MonkeyPatch, database_url: str, engine: Engine, buyers: list[Buyer]
) -> None:
    """The connection a batch was sold on goes back to the pool in transaction mode: the
    routes and the reveal desk that take it next get their BEGIN and COMMIT."""
    used: list[object] = []
    real = sell_function.sell

    def sell(session: Session, *args: Any) -> Any:
        used.append(session.connection().connection.driver_connection)
        return real(session, *args)

    monkeypatch.setattr(sell_function, "sell", sell)
    alone = make_engine(database_url, pool_size=1)  # one connection: the desk's comes back
    counter = desk.SalesDesk(make_sessionmaker(alone))
    try:
        assert _serial(counter.submit(buyers[0].purchase()), WAIT) == 1
    finally:
        counter.close()
    try:
        with alone.connect() as connection:
            driver = connection.connection.driver_connection
            assert used == [driver]
            assert isinstance(driver, psycopg.Connection)
            assert not driver.autocommit
    finally:
        alone.dispose()
