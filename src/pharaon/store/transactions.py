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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

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
    """Reads and writes on ``engine``."""

    def __init__(self, engine: Engine, *, readers: int = 10) -> None:
        self.engine = engine
        self._sessions = make_sessionmaker(engine)
        self._reader = make_reader(engine, pool_size=readers)
        self._turn = threading.Lock() if writers_at_once(engine) == 1 else None

    def close(self) -> None:
        """Close the readers' connections (the engine's own are its owner's to close)."""
        self._reader.dispose()

    def read(self, fn: Callable[..., T], /, **kwargs: Any) -> T:
        """``fn(connection=..., **kwargs)`` in a read transaction."""
        try:
            with self._reader.connect() as connection, connection.begin():
                return fn(connection=connection, **kwargs)
        except SQLAlchemyError as exc:
            raise translated(exc) from exc

    def read_each(self, reads: Sequence[Callable[[Connection], Any]]) -> list[Any]:
        """Each of ``reads`` run on one connection in one read transaction, in order: its
        result, or the exception it raised. After a database error the rest go on in a new
        transaction, unless the database is away: then they all get that error at once."""
        outcomes: list[Any] = []
        while len(outcomes) < len(reads):
            try:
                with self._reader.connect() as connection, connection.begin():
                    for read in reads[len(outcomes) :]:
                        try:
                            outcomes.append(read(connection))
                        except SQLAlchemyError:
                            raise
                        except Exception as exc:  # a refusal: the others go on
                            outcomes.append(exc)
            except SQLAlchemyError as exc:
                error = translated(exc)
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

    def transact(self, work: Callable[[Session], T]) -> T:
        """``work`` in a write transaction, committed; run again after a lost race. The caller
        holds its turn (:meth:`turn`)."""
        attempt = 1
        while True:
            try:
                with self._sessions() as session, session.begin():
                    return work(session)
            except SQLAlchemyError as exc:
                if classify(exc) is not Fault.RETRY or attempt == ATTEMPTS:
                    raise translated(exc) from exc
                _log.info("a transaction lost a race (%s); again", exc.__class__.__name__)
                attempt += 1

    def ping(self) -> None:
        """Raise unless the database answers a ``SELECT 1`` (and a SQLite file is still at its
        path)."""
        with self._reader.connect() as connection:
            connection.execute(text("SELECT 1"))
        check_file(self.engine)


def translated(exc: SQLAlchemyError) -> Exception:
    """What ``exc`` means to the caller (see the module's docstring)."""
    fault = classify(exc)
    first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if fault in (Fault.UNAVAILABLE, Fault.RETRY):
        return DatabaseUnavailableError(first_line)
    if fault is Fault.INVALID:
        return DatabaseRefusedValueError(first_line)
    return exc
