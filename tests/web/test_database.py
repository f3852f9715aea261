"""The routes' two doors to the database (web/database.py), on both databases: requests waiting
together served in one batch, a refusal returned by a write committed then raised, a bug in one
request not failing the others, the database away answered at once to every request waiting,
and a lost race run again."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import Connection, Engine, create_engine, func, insert, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError, ServiceError
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.store.tables import LedgerTransaction
from pharaon.web.database import Database

WAIT = 60.0  # seconds: generous, the machine is shared


@pytest.fixture
def db(engine: Engine) -> Iterator[Database]:
    database = Database(engine, readers=2, writers=2)
    yield database
    database.close()


def _count(connection: Connection) -> int:
    return int(connection.execute(select(func.count()).select_from(LedgerTransaction)).scalar_one())


def _mark(session: Session, kind: str) -> None:
    session.execute(insert(LedgerTransaction).values(kind=kind, created_at=utcnow()))


class Held:
    """A function written together that records each batch's requests, holds the first batch
    until ``opened`` is set, and refuses the requests named ``no``."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(
        self, *, session: Session, requests: Sequence[str], now: datetime
    ) -> list[str | ServiceError]:
        assert now.tzinfo is not None  # the batch's one time, aware UTC
        self.batches.append(list(requests))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.opened.wait(WAIT)
        for request in requests:
            if request == "bug":
                raise RuntimeError("a bug met by one request")
            _mark(session, request)
        return [NotFoundError(r) if r == "no" else r.upper() for r in requests]


def _a_then_three(db: Database, held: Held) -> list[Any]:
    """ "a" alone, then "b", "no" and "c", queued while it is served."""

    async def main() -> list[Any]:
        first = asyncio.ensure_future(db.write_together(held, "a"))
        while not held.entered.is_set():
            await asyncio.sleep(0.01)
        rest = [asyncio.ensure_future(db.write_together(held, r)) for r in ("b", "no", "c")]
        await asyncio.sleep(0.1)  # queued while the first batch is served
        held.opened.set()
        return await asyncio.gather(first, *rest, return_exceptions=True)

    return asyncio.run(main())


def test_requests_waiting_together_are_served_in_one_batch(db: Database) -> None:
    held = Held()
    answers = _a_then_three(db, held)
    assert held.batches == [["a"], ["b", "no", "c"]]
    assert answers[:2] == ["A", "B"]
    assert isinstance(answers[2], NotFoundError)
    assert answers[3] == "C"
    assert db.transactions.read(_count) == 4  # one batch's refusal changed nothing of it


def test_each_batch_s_size_is_told_to_the_metrics(engine: Engine) -> None:
    told: list[tuple[str, int]] = []
    db = Database(engine, readers=1, writers=1, on_batch=lambda *batch: told.append(batch))
    try:
        _a_then_three(db, Held())
        assert asyncio.run(db.read(_count)) == 4
    finally:
        db.close()
    assert told == [("together", 1), ("together", 3), ("reads", 1)]


def test_a_batch_that_cannot_be_counted_is_still_answered(engine: Engine) -> None:
    def broken(door: str, size: int) -> None:
        raise RuntimeError("the metrics are gone")

    # A deadline: a door whose thread died would leave the second write waiting for ever.
    db = Database(engine, readers=1, writers=1, deadline=10, on_batch=broken)
    try:
        for mark in ("a", "b"):  # the door's thread lives on after the first
            assert asyncio.run(db.write(_mark, kind=mark)) is None
        assert asyncio.run(db.read(_count)) == 2
    finally:
        db.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_what_arrives_while_a_sqlite_writer_waits_its_turn_joins_its_batch(
    db: Database,
) -> None:
    """SQLite has one writer: while another write of this process holds the turn, the
    requests that arrive are served in one batch once it is free."""
    held = Held()
    held.opened.set()

    async def main() -> list[Any]:
        with db.transactions.turn():  # another write holds it
            asks = [asyncio.ensure_future(db.write_together(held, r)) for r in "abcd"]
            await asyncio.sleep(0.2)
            assert held.batches == []
        return await asyncio.gather(*asks)

    assert asyncio.run(main()) == ["A", "B", "C", "D"]
    assert held.batches == [["a", "b", "c", "d"]]


def test_a_bug_met_by_one_request_of_a_batch_does_not_fail_the_others(db: Database) -> None:
    held = Held()

    async def main() -> list[Any]:
        first = asyncio.ensure_future(db.write_together(held, "a"))
        while not held.entered.is_set():
            await asyncio.sleep(0.01)
        rest = [asyncio.ensure_future(db.write_together(held, r)) for r in ("b", "bug", "c")]
        await asyncio.sleep(0.1)
        held.opened.set()
        return await asyncio.gather(first, *rest, return_exceptions=True)

    answers = asyncio.run(main())
    assert answers[0] == "A"
    assert answers[1] == "B"
    assert isinstance(answers[2], RuntimeError)
    assert answers[3] == "C"
    # The failed batch was rolled back, then each was served alone: b and c once each.
    assert held.batches[1] == ["b", "bug", "c"]
    assert sorted(held.batches[2:]) == [["b"], ["bug"], ["c"]]
    assert db.transactions.read(_count) == 3


def test_a_refusal_returned_by_a_write_is_committed_then_raised(db: Database) -> None:
    def refuse_and_keep(*, session: Session) -> ServiceError:
        _mark(session, "kept")
        return NotFoundError("refused, with a trace")

    def refuse(*, session: Session) -> None:
        _mark(session, "lost")
        raise NotFoundError("refused, nothing kept")

    with pytest.raises(NotFoundError, match="with a trace"):
        asyncio.run(db.write(refuse_and_keep))
    with pytest.raises(NotFoundError, match="nothing kept"):
        asyncio.run(db.write(refuse))
    kinds = db.transactions.read(
        lambda connection: connection.execute(select(LedgerTransaction.kind)).scalars().all()
    )
    assert kinds == ["kept"]


def test_a_lost_race_is_run_again(db: Database) -> None:
    tries: list[int] = []

    def racing(*, session: Session) -> str:
        tries.append(1)
        _mark(session, f"try {len(tries)}")
        if len(tries) < 3:  # PostgreSQL's serialization failure: the transaction is rolled back
            raise OperationalError("UPDATE", {}, psycopg.errors.SerializationFailure())
        return "done"

    assert asyncio.run(db.write(racing)) == "done"
    assert len(tries) == 3
    kinds = db.transactions.read(
        lambda connection: connection.execute(select(LedgerTransaction.kind)).scalars().all()
    )
    assert kinds == ["try 3"]


def test_reads_see_one_snapshot(db: Database, engine: Engine) -> None:
    """A read's statements agree with each other while writes commit meanwhile."""
    first_read = threading.Event()
    written = threading.Event()

    def twice(*, connection: Connection) -> tuple[int, int]:
        before = _count(connection)
        first_read.set()
        assert written.wait(WAIT)
        return before, _count(connection)

    def write_meanwhile() -> None:
        assert first_read.wait(WAIT)
        with Session(engine) as session, session.begin():
            _mark(session, "meanwhile")
        written.set()

    writer = threading.Thread(target=write_meanwhile)
    writer.start()
    seen = asyncio.run(db.read(twice))
    writer.join()
    assert seen == (0, 0)
    assert asyncio.run(db.read(_by_keyword_count)) == 1  # the next read sees it


def _by_keyword_count(*, connection: Connection) -> int:
    return _count(connection)


def test_every_request_waiting_gets_the_database_away_at_once(tmp_path: Any) -> None:
    """No database: each of many reads and writes waiting together is answered 'away', not
    one after the other after a wait each."""
    nowhere = create_engine(f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")
    away = Database(nowhere, readers=1, writers=1)

    def write(*, session: Session) -> None:
        _mark(session, "x")

    async def main() -> list[Any]:
        asks: list[Any] = [away.read(_by_keyword_count) for _ in range(20)]
        asks += [away.write(write) for _ in range(20)]
        return await asyncio.gather(*asks, return_exceptions=True)

    started = time.monotonic()
    try:
        answers = asyncio.run(main())
    finally:
        away.close()
    assert all(isinstance(a, DatabaseUnavailableError) for a in answers), answers
    assert time.monotonic() - started < 10


def test_a_ping_given_up_on_before_it_began_does_not_keep_the_checks_failing(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A health check that times out before its ping even started (a busy host) answers no,
    but the ping still runs, and once it has answered the next check pings again: one ping
    given up on must not leave the server unhealthy for ever."""
    pinged = threading.Event()

    def slow_ping() -> None:
        time.sleep(0.05)
        pinged.set()

    monkeypatch.setattr(db.transactions, "ping", slow_ping)

    async def checks() -> tuple[bool, bool, bool]:
        given_up = await db.ping(1e-9)
        while_out = await db.ping(1e-9)  # the first is still out: no second ping
        assert await asyncio.to_thread(pinged.wait, WAIT), "the ping given up on never ran"
        return given_up, while_out, await db.ping(WAIT)

    assert asyncio.run(checks()) == (False, False, True)
