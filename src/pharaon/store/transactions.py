"""The one place where transactions begin, commit and are tried again, for the server
(``web/database.py`` runs these on its threads) and the commands (``cli/database.py``).

- :meth:`Transactions.read` runs a function of a ``Connection`` in a read transaction (one
  snapshot, nothing written: :func:`pharaon.store.engine.make_reader`).
- :meth:`Transactions.write` runs a function of a ``Session`` in a write transaction, committed
  when it returns and rolled back when it raises; the function neither begins nor commits.
  A transaction that lost a race (PostgreSQL's serialization failure or deadlock) is run again,
  up to :data:`ATTEMPTS` times.

A database error leaves as :class:`DatabaseUnavailableError` when the database is away or
cannot take writes now, :class:`DatabaseRefusedValueError` when it refused a value
(:mod:`pharaon.store.faults`), and as itself otherwise (a bug). SQLite has one writer: the
writes of a process take turns (:meth:`Transactions.turn`) instead of waiting in SQLite's busy
handler.

With a deadline (the server's, ``PHARAON_DB_DEADLINE_SECONDS``; the commands have none), a
transaction still running at its deadline, its COMMIT included, is cancelled on the database
(:mod:`pharaon.store.deadlines`) and leaves as :class:`DatabaseUnavailableError`: cancelled, or
committed without the confirmation it waited for (a synchronous standby's), its outcome is
unknown to the caller, who learns it by asking again (a purchase's Idempotency-Key).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import EllipsisType
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from pharaon.store.deadlines import UNWATCHED, Watch, Watchdog
from pharaon.store.engine import check_file, make_reader, make_sessionmaker, writers_at_once
from pharaon.store.faults import (
    DatabaseRefusedValueError,
    DatabaseUnavailableError,
    Fault,
    classify,
)

ATTEMPTS = 3
_log = logging.getLogger(__name__)

T = TypeVar("T")


class Transactions:
    """Reads and writes on ``engine``, each cancelled past ``deadline`` seconds (None: no
    deadline)."""

    def __init__(self, engine: Engine, *, readers: int = 10, deadline: float | None = None) -> None:
        self.engine = engine
        self.deadline = deadline
        self._sessions = make_sessionmaker(engine)
        self._reader = make_reader(engine, pool_size=readers)
        self._turn = threading.Lock() if writers_at_once(engine) == 1 else None
        self._watchdog = Watchdog()

    def close(self) -> None:
        """Close the readers' connections (the engine's own are its owner's to close)."""
        self._reader.dispose()

    def read(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """``fn(connection=..., **kwargs)`` in a read transaction."""
        watch = UNWATCHED
        try:
            with self._reader.connect() as connection, connection.begin():
                with self._watch(connection) as watch:
                    found = fn(connection=connection, **kwargs)
                _in_time(watch)
                return found
        except SQLAlchemyError as exc:
            raise translated(exc, overdue=watch.overdue) from exc

    def read_each(
        self,
        reads: Sequence[Callable[[Connection], Any]],
        deadlines: Sequence[float | None] | None = None,
    ) -> list[Any]:
        """Each of ``reads`` run on one connection in one read transaction, in order: its
        result, or the exception it raised; each cancelled past its deadline (``deadlines``,
        in the same order; the default's if not given). After a database error the rest go on
        in a new transaction, unless the database is away: then they all get that error at
        once."""
        seconds = list(deadlines or [self.deadline] * len(reads))
        outcomes: list[Any] = []
        while len(outcomes) < len(reads):
            watch = UNWATCHED
            try:
                with self._reader.connect() as connection, connection.begin():
                    for read in reads[len(outcomes) :]:
                        with self._watch(connection, seconds[len(outcomes)]) as watch:
                            try:
                                outcomes.append(read(connection))
                            except SQLAlchemyError:
                                raise
                            except Exception as exc:  # a refusal: the others go on
                                outcomes.append(exc)
            except SQLAlchemyError as exc:
                error = translated(exc, overdue=watch.overdue)
                left = len(reads) - len(outcomes)
                outcomes.extend(
                    [error] * (left if isinstance(error, DatabaseUnavailableError) else 1)
                )
        return outcomes

    def write(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """``fn(session=..., **kwargs)`` in a write transaction, in this process's turn."""
        with self.turn():
            return self.transact(lambda session: fn(session=session, **kwargs))

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this process's turn to write (on SQLite; at once elsewhere)."""
        with self._turn or nullcontext():
            yield

    def transact(
        self, work: Callable[[Session], T], *, deadline: float | EllipsisType | None = ...
    ) -> T:
        """``work`` in a write transaction, committed; run again after a lost race. The caller
        holds its turn (:meth:`turn`). Past ``deadline`` seconds (the default's if not given),
        its COMMIT included, it is cancelled: :class:`DatabaseUnavailableError`, the outcome
        unknown."""
        seconds = self.deadline if deadline is ... else deadline
        attempt = 1
        while True:
            watch = UNWATCHED
            try:
                with self._sessions() as session:  # left without a commit: rolled back
                    session.begin()
                    with self._watch(session.connection(), seconds) as watch:
                        done = work(session)
                        session.commit()
                _in_time(watch)
                return done
            except SQLAlchemyError as exc:
                if watch.overdue or classify(exc) is not Fault.RETRY or attempt == ATTEMPTS:
                    raise translated(exc, overdue=watch.overdue) from exc
                _log.info("a transaction lost a race (%s); again", exc.__class__.__name__)
                attempt += 1

    def _watch(
        self, connection: Connection, seconds: float | EllipsisType | None = ...
    ) -> AbstractContextManager[Watch]:
        """The work done on ``connection`` in this block, cancelled past ``seconds`` (the
        default deadline if not given)."""
        deadline = self.deadline if seconds is ... else seconds
        return self._watchdog.watch(connection.connection.dbapi_connection, deadline)

    def ping(self) -> None:
        """Raise unless the database answers a ``SELECT 1`` (and a SQLite file is still at its
        path)."""
        with self._reader.connect() as connection:
            connection.execute(text("SELECT 1"))
        check_file(self.engine)


def _in_time(watch: Watch) -> None:
    """Raise if the work watched was done past its deadline: what the driver answered after a
    cancel (a COMMIT that stopped waiting for its standby) is not an outcome to rely on."""
    if watch.overdue:
        raise DatabaseUnavailableError(_OVERDUE)


_OVERDUE = "the database did not answer within the deadline: cancelled, outcome unknown"


def translated(exc: SQLAlchemyError, *, overdue: bool = False) -> Exception:
    """What ``exc`` means to the caller (see the module's docstring); ``overdue``: it came
    from work cancelled at its deadline."""
    if overdue:
        return DatabaseUnavailableError(_OVERDUE)
    fault = classify(exc)
    first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if fault in (Fault.UNAVAILABLE, Fault.RETRY):
        return DatabaseUnavailableError(first_line)
    if fault is Fault.INVALID:
        return DatabaseRefusedValueError(first_line)
    return exc
