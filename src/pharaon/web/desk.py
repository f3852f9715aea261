"""Desks: requests that arrive together are served together.

A desk is a thread that takes every request waiting in its queue and serves them as one batch,
then answers each one; while a batch is served the next requests queue up, so under load a batch
grows to what arrived meanwhile, and a lone request is served at once.

- The sales desk sells the orders waiting together with
  :func:`pharaon.service.sales.sell_many` in one transaction (group commit): one commit, so one
  disk flush, and one lock of the hot rows for the batch. A buyer is answered only after the
  commit that made its purchase durable.
- The reveal desk uncovers the grids asked for together with
  :func:`pharaon.service.plays.reveal_many`, in one transaction: one commit for the batch.
- Both begin the transaction before they take the batch (:class:`WritingDesk`): what arrives
  while SQLite's writer lock is awaited joins the batch. The sales desk begins it in autocommit
  on PostgreSQL, where the batch's sale is one statement (:meth:`SalesDesk._begin`).
- The session desk looks up the tokens of every route's requests with
  :func:`pharaon.service.sessions.lookup_many`, in one read, off the event loop.
- The read desk runs the reads of one statement that routes give it (a player's standing, a
  play, the history), one after the other on one connection, off the event loop: a thread
  wakes once per batch, not once per request.

Nothing is kept between batches: the orders, sessions and outcomes live in the database.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.service import plays, sales, sessions
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.service.plays import PlayView

MAX_BATCH = 64

_log = logging.getLogger(__name__)

Request = TypeVar("Request")
Answer = TypeVar("Answer")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Waiting(Generic[Request, Answer]):
    """A request and where its answer goes: a thread's future, or an event loop's (``loop``)."""

    request: Request
    answer: Future[Answer] | asyncio.Future[Answer]
    loop: asyncio.AbstractEventLoop | None = None

    def take(self) -> bool:
        """Whether to serve it: not if its asker gave up (cancelled) before the batch. An event
        loop's future cancelled after this look is served all the same (its answer is then
        dropped), as a thread's future that is already running."""
        if isinstance(self.answer, Future):
            # Once running, a thread's future can no longer be cancelled.
            return self.answer.set_running_or_notify_cancel()
        return not self.answer.done()


def _settle(
    answers: list[tuple[Future[Answer] | asyncio.Future[Answer], Answer | BaseException]],
) -> None:
    for answer, outcome in answers:
        if answer.done():  # an event loop's future cancelled meanwhile
            continue
        if isinstance(outcome, BaseException):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)


class Desk(Generic[Request, Answer]):
    """Serves the requests given to :meth:`submit` in batches, on its own thread (started on
    first use, stopped by :meth:`close`). Subclasses say how a batch is served."""

    def __init__(self, name: str, *, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._name = name
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Waiting[Request, Answer] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _serve_batch(self, requests: list[Request]) -> Sequence[Answer | Exception]:
        """Each request's answer, or the exception that refused it, in order. An exception
        raised here fails the batch: its requests are then served one by one."""
        raise NotImplementedError

    def submit(self, request: Request) -> Future[Answer]:
        """Queue ``request``; the future holds its answer or the exception that refused it."""
        answer: Future[Answer] = Future()
        self._put(_Waiting(request, answer))
        return answer

    async def ask(self, request: Request) -> Answer:
        """Serve ``request``, waiting without blocking the event loop. The answers of a batch
        reach their loop together, in one wake-up."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._put(_Waiting(request, answer, loop))
        return await answer

    def _put(self, waiting: _Waiting[Request, Answer]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the {self._name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name=f"pharaon-{self._name.replace(' ', '-')}", daemon=True
                )
                self._thread.start()
            self._queue.put(waiting)

    def close(self) -> None:
        """Serve what is queued, then stop the thread."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()

    def _turn(self) -> AbstractContextManager[None]:
        """Entered once a request waits, before the batch is taken, and left once it is served:
        a desk that waits its turn for something waits here, so what arrives meanwhile joins
        this batch instead of the next."""
        return nullcontext()

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            with self._turn():
                batch = [first]
                while len(batch) < self._max_batch:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        self._queue.put(None)  # stop after this batch
                        break
                    batch.append(more)
                batch = [w for w in batch if w.take()]
                if batch:
                    self._answer(batch)

    def _answer(self, batch: list[_Waiting[Request, Answer]]) -> None:
        try:
            outcomes = self._serve_batch([w.request for w in batch])
        except Exception as exc:
            if len(batch) > 1:
                # A database error rolled the whole batch back: serve each request alone, so
                # one that cannot be served does not fail the others.
                _log.warning(
                    "a batch of %d at the %s failed (%s); serving one by one",
                    len(batch),
                    self._name,
                    exc,
                )
                for waiting in batch:
                    self._answer([waiting])
            else:
                self._deliver(batch, [exc])
            return
        self._deliver(batch, outcomes)

    def _deliver(
        self, batch: list[_Waiting[Request, Answer]], outcomes: Sequence[Answer | BaseException]
    ) -> None:
        here = []
        by_loop: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        for waiting, outcome in zip(batch, outcomes, strict=True):
            if waiting.loop is None:
                here.append((waiting.answer, outcome))
            else:
                by_loop.setdefault(waiting.loop, []).append((waiting.answer, outcome))
        _settle(here)
        for loop, answers in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, answers)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                _log.warning("%d answers of the %s had no loop to go to", len(answers), self._name)


class WritingDesk(Desk[Request, Answer]):
    """Serves each batch in one transaction of ``sessions``, committed before anyone is
    answered. The transaction begins before the batch is taken: on SQLite, BEGIN waits for the
    writer lock, and the requests that arrive meanwhile are served in this batch instead of
    the next. Subclasses say what a batch writes (:meth:`_write`)."""

    def __init__(
        self, name: str, sessions: sessionmaker[Session], *, max_batch: int = MAX_BATCH
    ) -> None:
        super().__init__(name, max_batch=max_batch)
        self._sessions = sessions
        self._begun: Session | None = None  # the next batch's transaction, begun by _turn

    def _write(self, session: Session, requests: list[Request]) -> Sequence[Answer | Exception]:
        raise NotImplementedError

    def _begin(self, session: Session) -> None:
        """Begin the batch's transaction (on SQLite, BEGIN IMMEDIATE waits for the writer)."""
        session.connection()

    @contextmanager
    def _turn(self) -> Iterator[None]:
        session = self._sessions()
        try:
            self._begin(session)
            self._begun = session
        except Exception as exc:  # the batch begins its own, meets the error and answers it
            _log.warning("the %s could not begin a transaction: %s", self._name, exc)
        try:
            yield
        finally:
            self._begun = None
            try:
                session.close()  # rolls back what was not committed: the lock is given back
            except Exception:  # the desk goes on: its thread is the only one that serves
                _log.exception("the %s could not close its session", self._name)

    def _serve_batch(self, requests: list[Request]) -> Sequence[Answer | Exception]:
        begun, self._begun = self._begun, None
        if begun is None:  # served one by one after a failure, or no transaction could begin
            with self._sessions() as session:
                self._begin(session)
                return self._commit(session, requests)
        try:
            return self._commit(begun, requests)  # _turn closes it once the batch is answered
        except BaseException:
            begun.close()  # rolled back, the lock given back: the requests are tried one by one
            raise

    def _commit(self, session: Session, requests: list[Request]) -> Sequence[Answer | Exception]:
        outcomes = self._write(session, requests)
        session.commit()  # before anyone is answered
        return outcomes


class SalesDesk(WritingDesk[sales.Order, sales.SoldPlay | PlayView]):
    """Sells orders in batches, each batch in one transaction of ``sessions`` (group commit):
    on PostgreSQL one statement in autocommit (:meth:`_begin`)."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        max_batch: int = MAX_BATCH,
        on_sale: Callable[[int, Mode], None] | None = None,
    ) -> None:
        super().__init__("sales desk", sessions, max_batch=max_batch)
        self._on_sale = on_sale  # told (stake_cents, mode) of each unit sold, after the commit

    async def buy(self, order: sales.Order) -> PlayView:
        """Sell ``order``; its play (viewed here, in the buyer's thread), or the ServiceError
        that refused it."""
        outcome = await self.ask(order)
        return outcome.view() if isinstance(outcome, sales.SoldPlay) else outcome

    def _begin(self, session: Session) -> None:
        """On PostgreSQL the batch's sale is one statement, the call of ``pharaon_sell``
        (:mod:`pharaon.service.sell_function`): in autocommit it is a transaction of its own,
        without the BEGIN and COMMIT round trips, and the reads that may follow it (a replay's
        play, a loss refusal's figures) see it committed. On SQLite the steps share one
        transaction, committed by :meth:`WritingDesk._commit`."""
        if session.get_bind().dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        else:
            super()._begin(session)

    def _write(
        self, session: Session, requests: list[sales.Order]
    ) -> Sequence[sales.SoldPlay | PlayView | Exception]:
        return sales.sell_many(session=session, orders=requests, now=utcnow())

    def _serve_batch(
        self, requests: list[sales.Order]
    ) -> Sequence[sales.SoldPlay | PlayView | Exception]:
        outcomes = super()._serve_batch(requests)
        if self._on_sale is not None:
            try:
                for order, outcome in zip(requests, outcomes, strict=True):
                    if isinstance(outcome, sales.SoldPlay):
                        self._on_sale(order.stake_cents, order.mode)
            except Exception:  # committed: a failure now must not sell the batch again
                _log.exception("the sales desk could not count its sales")
        return outcomes


class RevealDesk(WritingDesk[plays.Reveal, PlayView]):
    """Uncovers grids in batches, each batch in one transaction of ``sessions``."""

    def __init__(self, sessions: sessionmaker[Session], *, max_batch: int = MAX_BATCH) -> None:
        super().__init__("reveal desk", sessions, max_batch=max_batch)

    def _write(
        self, session: Session, requests: list[plays.Reveal]
    ) -> Sequence[PlayView | Exception]:
        return plays.reveal_many(session=session, reveals=requests)


class SessionDesk(Desk[str, sessions.Found]):
    """Looks bearer tokens up in batches, one read each (``reader``:
    :func:`pharaon.store.engine.make_reader`); sessions idle over ``idle`` are found expired."""

    def __init__(self, reader: Engine, *, idle: timedelta, max_batch: int = MAX_BATCH) -> None:
        super().__init__("session desk", max_batch=max_batch)
        self._reader = reader
        self._idle = idle

    def _serve_batch(self, requests: list[str]) -> Sequence[sessions.Found | Exception]:
        with self._reader.connect() as connection:
            return sessions.lookup_many(
                connection=connection, tokens=requests, now=utcnow(), idle=self._idle
            )


class ReadDesk(Desk[Callable[[Connection], Any], Any]):
    """Runs reads in batches on one connection of ``reader``
    (:func:`pharaon.store.engine.make_reader`: each statement on its own, seeing the last
    commit; on SQLite beside the writer). A read is a function of that connection that runs one
    statement; one that raises a ServiceError gets it as its answer, the others theirs."""

    def __init__(self, reader: Engine, *, max_batch: int = MAX_BATCH) -> None:
        super().__init__("read desk", max_batch=max_batch)
        self._reader = reader

    async def read(self, read: Callable[[Connection], T]) -> T:
        """What ``read`` returns, or the ServiceError it raised."""
        return cast(T, await self.ask(read))

    def _serve_batch(self, requests: list[Callable[[Connection], Any]]) -> Sequence[Any]:
        answers: list[Any] = []
        with self._reader.connect() as connection:
            for read in requests:
                try:
                    answers.append(read(connection))
                except ServiceError as exc:
                    answers.append(exc)
        return answers
