"""The routes' two doors to the database: a reader and a writer (docs/architecture.md).

- ``await db.read(fn, **kwargs)`` runs ``fn(connection=..., **kwargs)``, a service function
  that reads, in a read transaction (one snapshot, nothing written:
  :func:`pharaon.store.engine.make_reader`).
- ``await db.write(fn, **kwargs)`` runs ``fn(session=..., **kwargs)``, a service function that
  writes, in a transaction of its own, committed before this answers; the function neither
  begins nor commits. A refusal that must leave a trace (a lock-out counted, an idle session
  deleted) is *returned* by the function as a :class:`ServiceError`: committed, then raised.
- ``await db.write_together(fn, request)`` is a write that shares its transaction with the
  other requests for ``fn`` waiting at the same moment: ``fn(session=..., requests=[...],
  now=...)`` answers each request (or refuses it) and is committed once for all, so the rows
  every purchase locks and the disk flush are paid once per batch (group commit).
  ``await db.read_together(fn, request)`` is its reader's twin (``fn(connection=...,
  requests=[...], now=...)``): every request's session is looked up that way, in one
  statement for those waiting together.

Behind each door, requests queue and a few threads take what waits whenever they are free, as
one batch (:class:`_Door`): the reads of a batch share a read transaction, the writes of a
batch each have their own, a batch for ``write_together`` is one call. Lone requests are served
at once; under load a batch grows to what arrived during the one before, and a thread wakes
once per batch rather than once per request.

Transactions begin, commit and are tried again in one place, for the server and the commands
alike (:mod:`pharaon.store.transactions`). A database that is away or cannot take writes
(connection lost, a standby, a disk full or read-only) is :class:`DatabaseUnavailableError`
(503) for every request waiting, within the connect timeout, and the next request after it is
back finds new connections; a value the database refuses is :class:`DatabaseRefusedValueError`
(422). SQLite has one writer: this process's writes take turns, so none waits in SQLite's busy
handler.

Under ``pharaon serve`` the writes are not run in the HTTP workers: ``Database(...,
writer=line)`` hands every write, and every write done together, to the server's one writer
process (:mod:`pharaon.web.writer`), which serves them at doors of its own, the orders of all
workers batched together; the reads stay in each worker. The writer's doors are these same
doors, asked with :meth:`Database.put_write` and :meth:`Database.put_together`.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import queue
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Annotated, Any, Generic, Protocol, TypeVar, cast

from fastapi import Depends, Request
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.store.engine import writers_at_once
from pharaon.store.faults import DatabaseRefusedValueError, DatabaseUnavailableError
from pharaon.store.transactions import Transactions

MAX_BATCH = 64
# The functions read together (the sessions' look-up) and written together (purchases,
# reveals): a thread and a connection each.
READ_TOGETHER = 1
WRITE_TOGETHER = 2
_log = logging.getLogger(__name__)

T = TypeVar("T")
Job = TypeVar("Job")
Answer = TypeVar("Answer")
Answer_co = TypeVar("Answer_co", covariant=True)
Request_contra = TypeVar("Request_contra", contravariant=True)


class Together(Protocol[Request_contra, Answer_co]):
    """A service function that writes for several requests in one transaction: each one's
    answer, or the :class:`ServiceError` that refused it, in the requests' order."""

    def __call__(
        self, *, session: Session, requests: Sequence[Request_contra], now: datetime
    ) -> Sequence[Answer_co | ServiceError]: ...


class ReadTogether(Protocol[Request_contra, Answer_co]):
    """A service function that reads for several requests at once: each one's answer, or the
    :class:`ServiceError` that refused it, in the requests' order."""

    def __call__(
        self, *, connection: Connection, requests: Sequence[Request_contra], now: datetime
    ) -> Sequence[Answer_co | ServiceError]: ...


@dataclass(frozen=True, slots=True)
class Write:
    """A write handed to the server's writer: ``fn(session=..., **kwargs)`` (``slow``: under
    the slow deadline)."""

    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    slow: bool = False


@dataclass(frozen=True, slots=True)
class WriteTogether:
    """A request handed to the server's writer, to be written together with the others for
    ``fn``."""

    fn: Together[Any, Any]
    request: Any


class Writer(Protocol):
    """The server's writer, seen from a worker (:class:`pharaon.web.writer.WriterLine`)."""

    def ask(self, job: Write | WriteTogether) -> Awaitable[Any]:
        """``job``'s outcome (a write's answer or the :class:`ServiceError` it returned); what
        refused it is raised."""
        ...

    def close(self) -> None: ...


class Database:
    """The reader and the writer over ``engine``: ``readers`` threads for the reads,
    ``writers`` for the writes (one on SQLite, whose writes take turns), and a thread per
    function written together; each holds one pooled connection. A request waits for its
    answer ``deadline`` seconds at most (``slow_deadline`` for the operator's slow work), and
    what it asked for is cancelled on the database past that (store/deadlines.py): then it is
    answered :class:`DatabaseUnavailableError`, the outcome unknown. None: no deadline.
    ``on_batch(door, size)`` is told the size of each batch a door serves (the metrics).
    ``writer``: the server's writer process, which runs the writes instead of this process
    (each still answered within its deadline here)."""

    def __init__(
        self,
        engine: Engine,
        *,
        readers: int,
        writers: int,
        deadline: float | None = None,
        slow_deadline: float | None = None,
        on_batch: Callable[[str, int], None] | None = None,
        writer: Writer | None = None,
    ) -> None:
        self.engine = engine
        self._on_batch = on_batch
        self._writer = writer
        self.deadline = deadline
        self.slow_deadline = slow_deadline
        # The readers' pool: a connection for each reader, and for the reads done together.
        self.transactions = Transactions(engine, readers=readers + READ_TOGETHER, deadline=deadline)
        self._reads: _Door[_Timed[Connection], Any] = _Door(
            "reads", self._read_each, threads=readers, on_batch=on_batch
        )
        self._writes: _Door[_Timed[Session], Any] = _Door(
            "writes",
            self._write_each,
            threads=writers if writers_at_once(engine) is None else 1,
            turn=self.transactions.turn,
            on_batch=on_batch,
        )
        self._together: dict[Any, _Door[Any, Any]] = {}
        self._together_lock = threading.Lock()
        # The health check's pings, one at a time on a thread of their own.
        self._pinger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pharaon-ping")
        self._ping_out: Future[None] | None = None

    async def read(self, fn: Callable[..., T], /, *, slow: bool = False, **kwargs: Any) -> T:
        """``fn(connection=..., **kwargs)`` in a read transaction; what it raised is raised.
        ``slow``: the operator's slow work, under the slow deadline."""
        seconds = self.slow_deadline if slow else self.deadline
        job = _Timed(partial(_by_connection, fn, kwargs), seconds)
        return cast(T, await _in_time(self._reads.ask(job), seconds))

    async def read_together(self, fn: ReadTogether[Job, Answer], request: Job) -> Answer:
        """``request``'s answer from ``fn``, read with the other requests for ``fn`` waiting
        meanwhile; the :class:`ServiceError` that refused it is raised."""
        door = self._door(fn, partial(self._read_together, fn), turn=nullcontext)
        return cast(Answer, await _in_time(door.ask(request), self.deadline))

    async def write(
        self, fn: Callable[..., T | ServiceError], /, *, slow: bool = False, **kwargs: Any
    ) -> T:
        """``fn(session=..., **kwargs)`` in a transaction of its own, committed before this
        returns; a :class:`ServiceError` it returns is raised once committed. ``slow``: the
        operator's slow work, under the slow deadline."""
        seconds = self.slow_deadline if slow else self.deadline
        if self._writer is not None:
            asked = self._writer.ask(Write(fn, kwargs, slow))
        else:
            asked = _asked(partial(self.put_write, fn, _crossed(kwargs), slow))
        outcome = _crossed(await _in_time(asked, seconds))
        if isinstance(outcome, ServiceError):
            raise outcome
        return cast(T, outcome)

    async def write_together(self, fn: Together[Job, Answer], request: Job) -> Answer:
        """``request``'s answer from ``fn``, run with the other requests for ``fn`` waiting
        meanwhile in one transaction; the :class:`ServiceError` that refused it is raised."""
        if self._writer is not None:
            asked = self._writer.ask(WriteTogether(fn, request))
            return cast(Answer, await _in_time(asked, self.deadline))
        asked = _asked(partial(self.put_together, fn, _crossed(request)))
        return cast(Answer, _crossed(await _in_time(asked, self.deadline)))

    def put_write(
        self, fn: Callable[..., Any], kwargs: dict[str, Any], slow: bool, asker: Asker, to: Replies
    ) -> None:
        """:meth:`write`'s job queued at its door: its outcome (the answer, or the exception
        to raise) goes ``to`` its replies with ``asker``, unless ``asker`` has given up."""
        seconds = self.slow_deadline if slow else self.deadline
        self._writes.put(_Timed(partial(_by_session, fn, kwargs), seconds), asker, to)

    def put_together(self, fn: Together[Job, Any], request: Job, asker: Asker, to: Replies) -> None:
        """:meth:`write_together`'s job queued at ``fn``'s door (as :meth:`put_write`)."""
        door = self._door(fn, partial(self._write_together, fn), turn=self.transactions.turn)
        door.put(request, asker, to)

    async def ping(self, seconds: float) -> bool:
        """Whether the database answers a ``SELECT 1`` within ``seconds``. One ping at a time:
        while one is out unanswered, the next says no at once rather than pile up threads. A
        ping given up on still runs (even if its thread had not begun), so the check after it
        has answered pings again."""
        out = self._ping_out
        if out is not None and not out.done():
            return False
        out = self._ping_out = self._pinger.submit(self.transactions.ping)
        answer = asyncio.wrap_future(out)
        answer.add_done_callback(_retrieved)  # an answer given up on is no error to log
        # Not wait_for: giving up on the answer must not cancel a ping not yet begun.
        done, _ = await asyncio.wait({answer}, timeout=seconds)
        if not done:
            return False
        try:
            answer.result()
        except (SQLAlchemyError, OSError):
            return False
        return True

    def close(self) -> None:
        """Serve what waits at the doors, then stop their threads."""
        with self._together_lock:
            doors: list[_Door[Any, Any]] = [self._reads, self._writes, *self._together.values()]
            self._together = {}
        for door in doors:
            door.close()
        if self._writer is not None:
            self._writer.close()
        # A ping out is left to end on its own; a later one gets a new thread.
        self._pinger.shutdown(wait=False, cancel_futures=True)
        self._pinger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pharaon-ping")
        self._ping_out = None
        self.transactions.close()

    def _door(
        self,
        fn: Any,
        serve: Callable[[list[Any]], Sequence[Any]],
        *,
        turn: Callable[[], AbstractContextManager[None]],
    ) -> _Door[Any, Any]:
        """The door of the requests for ``fn`` served together (a thread of its own)."""
        with self._together_lock:
            door = self._together.get(fn)
            if door is None:
                name = getattr(fn, "__qualname__", "together").replace(".", "-")
                door = self._together[fn] = _Door(
                    name, serve, threads=1, turn=turn, on_batch=self._on_batch
                )
        return door

    def _read_together(self, fn: ReadTogether[Job, Answer], requests: list[Job]) -> list[Any]:
        try:
            return list(
                self.transactions.read(
                    lambda connection: fn(connection=connection, requests=requests, now=utcnow())
                )
            )
        except Exception as exc:  # the database's error, or a bug: each request's
            return [exc] * len(requests)

    def _read_each(self, reads: list[_Timed[Connection]]) -> list[Any]:
        return self.transactions.read_each(
            [read.run for read in reads], [read.seconds for read in reads]
        )

    def _write_each(self, writes: list[_Timed[Session]]) -> list[Any]:
        outcomes: list[Any] = []
        for write in writes:
            try:
                outcomes.append(self.transactions.transact(write.run, deadline=write.seconds))
            except DatabaseUnavailableError as exc:  # away for one, away for all
                return outcomes + [exc] * (len(writes) - len(outcomes))
            except Exception as exc:  # a refusal, or a bug: this one's alone
                outcomes.append(exc)
        return outcomes

    def _write_together(self, fn: Together[Job, Answer], requests: list[Job]) -> list[Any]:
        try:
            return list(
                self.transactions.transact(
                    lambda session: fn(session=session, requests=requests, now=utcnow())
                )
            )
        except (DatabaseUnavailableError, DatabaseRefusedValueError, ServiceError) as exc:
            return [exc] * len(requests)
        except Exception as exc:
            if len(requests) == 1:
                return [exc]
            # A bug met by one request must not fail the others: each alone.
            _log.exception("a batch of %d failed; each is served alone", len(requests))
            return [self._write_together(fn, [one])[0] for one in requests]


Over = TypeVar("Over", Connection, Session)


@dataclass(frozen=True, slots=True)
class _Timed(Generic[Over]):
    """A read or a write for the doors, and how long it may take (None: no deadline)."""

    run: Callable[[Over], Any]
    seconds: float | None


def _crossed(value: T) -> T:
    """``value`` as it reaches the other side of a line to the writer (pickled there and
    back). Without a writer (an application in the tests' process) a write's arguments and its
    answer take the same way, so that one that could not cross fails there too. Its function
    crosses by name (the tests replace some in place); an exception is raised as it is (the
    lines carry any)."""
    return cast(T, pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))


async def _in_time(answer: Awaitable[T], seconds: float | None) -> T:
    """``answer``, or :class:`DatabaseUnavailableError` once ``seconds`` have passed: the
    request stops waiting (what it asked for is cancelled on the database, or was never
    begun: a job given up on before its batch is left out of it)."""
    try:
        return await asyncio.wait_for(answer, seconds)
    except TimeoutError:
        raise DatabaseUnavailableError(
            f"no answer from the database within {seconds:g} s: the outcome is unknown"
        ) from None


def _retrieved(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled():
        answer.exception()


def _by_connection(fn: Callable[..., T], kwargs: dict[str, Any], connection: Any) -> T:
    return fn(connection=connection, **kwargs)


def _by_session(fn: Callable[..., T], kwargs: dict[str, Any], session: Session) -> T:
    return fn(session=session, **kwargs)


class Asker(Protocol):
    """Who waits for a job's outcome: ``done()`` once it no longer waits (it gave up, or
    was answered), so that a job not yet begun is left out of its batch."""

    def done(self) -> bool: ...


class Replies(Protocol):
    """Where the outcomes of a batch's jobs go, each with its :class:`Asker`: all of them at
    once, from the door's thread."""

    def send(self, answers: list[tuple[Any, Any]]) -> None: ...


@dataclass(frozen=True, slots=True)
class _Loop:
    """The replies to askers waiting on the event loop ``loop`` (their answers, futures)."""

    loop: asyncio.AbstractEventLoop

    def send(self, answers: list[tuple[Any, Any]]) -> None:
        try:
            self.loop.call_soon_threadsafe(_settle, answers)
        except RuntimeError:  # the loop is closed: nobody waits any more
            _log.warning("%d answers had no event loop to go to", len(answers))


async def _asked(put: Callable[[Asker, Replies], None]) -> Any:
    """The outcome of the job ``put(asker, replies)`` queues, awaited on this event loop."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()
    put(answer, _Loop(loop))
    return await answer


@dataclass(frozen=True, slots=True)
class _Waiting(Generic[Job]):
    job: Job
    asker: Asker
    to: Replies


class _Door(Generic[Job, Answer]):
    """Jobs waiting for ``serve``, which takes a batch of them and gives each its outcome (or
    the exception to raise), in order; ``threads`` threads serve batches, each in its
    ``turn``, taken before the batch so that what arrives while it is awaited joins it.
    ``on_batch(name, size)`` is told each batch's size once it is served, before its answers
    are sent: whoever has an answer finds its batch counted."""

    def __init__(
        self,
        name: str,
        serve: Callable[[list[Job]], Sequence[Any]],
        *,
        threads: int,
        turn: Callable[[], AbstractContextManager[None]] = nullcontext,
        on_batch: Callable[[str, int], None] | None = None,
    ) -> None:
        self._name = name
        self._serve_batch = serve
        self._turn = turn
        self._on_batch = on_batch
        self._count = max(1, threads)
        self._queue: queue.SimpleQueue[_Waiting[Job] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    async def ask(self, job: Job) -> Answer:
        return cast(Answer, await _asked(partial(self.put, job)))

    def put(self, job: Job, asker: Asker, to: Replies) -> None:
        """Queue ``job``: its outcome goes ``to`` its replies, unless ``asker`` is done before
        its batch begins."""
        with self._lock:
            if not self._threads:  # started at the first job, again after a close
                self._threads = [
                    threading.Thread(
                        target=self._serve, name=f"pharaon-{self._name}-{n}", daemon=True
                    )
                    for n in range(self._count)
                ]
                for thread in self._threads:
                    thread.start()
            self._queue.put(_Waiting(job, asker, to))

    def close(self) -> None:
        """Serve what waits, then stop the threads (a later job starts them again)."""
        with self._lock:
            threads, self._threads = self._threads, []
            for _ in threads:
                self._queue.put(None)
        for thread in threads:
            thread.join()

    def _serve(self) -> None:
        while (first := self._queue.get()) is not None:
            with self._turn():
                batch, stop = self._take(first)
                if batch:
                    self._answer(batch)
            if stop:
                return

    def _take(self, first: _Waiting[Job]) -> tuple[list[_Waiting[Job]], bool]:
        """The jobs waiting now (those whose asker gave up left out), and whether this thread
        was told to stop after them."""
        batch, stop = drained(self._queue, first, MAX_BATCH)
        return [w for w in batch if not w.asker.done()], stop

    def _answer(self, batch: list[_Waiting[Job]]) -> None:
        try:
            outcomes = self._serve_batch([w.job for w in batch])
        except Exception as exc:  # the batch's own failure is each job's
            outcomes = [exc] * len(batch)
        if self._on_batch is not None:
            try:
                self._on_batch(self._name, len(batch))
            except Exception:  # a count lost, never the door's thread
                _log.exception("the size of a batch at %s was not counted", self._name)
        # The answers of a batch reach each of their destinations together, in one wake-up.
        by_destination: dict[Replies, list[tuple[Any, Any]]] = {}
        for waiting, outcome in zip(batch, outcomes, strict=True):
            by_destination.setdefault(waiting.to, []).append((waiting.asker, outcome))
        for to, answers in by_destination.items():
            to.send(answers)


Item = TypeVar("Item")


def drained(
    waiting: queue.SimpleQueue[Item | None], first: Item, most: int
) -> tuple[list[Item], bool]:
    """``first`` and what else waits in ``waiting`` now, ``most`` in all at most, and whether
    the ``None`` that tells its reader to stop was met among them."""
    taken = [first]
    while len(taken) < most:
        try:
            more = waiting.get_nowait()
        except queue.Empty:
            break
        if more is None:
            return taken, True
        taken.append(more)
    return taken, False


def _settle(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for answer, outcome in answers:
        if answer.done():  # its asker gave up meanwhile
            continue
        if isinstance(outcome, BaseException):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)


async def _database(request: Request) -> Database:
    db: Database = request.app.state.database
    return db


DatabaseDep = Annotated[Database, Depends(_database)]
