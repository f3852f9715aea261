"""Engines for SQLite (WAL, synchronous=FULL, busy timeout, BEGIN IMMEDIATE) and PostgreSQL."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_MS = 30_000
# A PostgreSQL that accepts the connection but never answers would hold a connect (and the
# thread waiting on it) for ever; the URL's own connect_timeout, if any, wins.
POSTGRES_CONNECT_SECONDS = 5
# An execution option: this engine only reads, one statement at a time, in autocommit: no
# BEGIN or ROLLBACK round trips, and on SQLite no write lock, so reads never queue behind a
# writer (WAL lets them run beside it). Each statement sees the latest commit.
READ_ONLY = "pharaon_read_only"


class DatabaseUrlError(ValueError):
    """A database URL this program cannot use."""


def normalise_url(url: str) -> str:
    """The SQLAlchemy URL for ``url``; plain ``postgresql://`` means psycopg 3."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise DatabaseUrlError(f"not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif backend != "sqlite":
        raise DatabaseUrlError(f"database must be sqlite or postgresql, got {backend!r}")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """An engine for ``url``; for a SQLite file, its folder is created if missing."""
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            raise DatabaseUrlError("SQLite needs a file: sqlite:///path/to/pharaon.db")
        Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_MS / 1000},
            pool_size=pool_size,
            max_overflow=pool_size,
        )
        # Rows inserted together go in one INSERT, not one step each: the driver gives up the
        # GIL at each step and the writer, holding the lock, waits to get it back.
        engine.dialect.use_insertmanyvalues_wo_returning = True
        _sqlite_setup(engine, _WriterLock(writer_lock_path(database)))
        _watch_writes(engine)
        return engine
    timeout = (
        {} if "connect_timeout" in parsed.query else {"connect_timeout": POSTGRES_CONNECT_SECONDS}
    )
    # No pre-ping: it would cost a round trip per checkout; stale connections are recycled.
    engine = create_engine(
        url, connect_args=timeout, pool_size=pool_size, max_overflow=pool_size, pool_recycle=1800
    )
    _watch_writes(engine)
    return engine


_WROTE = "pharaon_wrote"


def _watch_writes(engine: Engine) -> None:
    """Mark a connection's transaction once it has run an INSERT, UPDATE or DELETE, until it
    ends (:func:`has_uncommitted_writes`)."""

    @event.listens_for(engine, "begin")
    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _ended(connection: Any) -> None:
        if not connection.invalidated:  # a lost connection's info is gone with it
            connection.info.pop(_WROTE, None)

    @event.listens_for(engine, "after_cursor_execute")
    def _executed(
        connection: Any,
        _cursor: Any,
        _statement: Any,
        _parameters: Any,
        context: Any,
        _executemany: bool,
    ) -> None:
        if context is not None and (context.isinsert or context.isupdate or context.isdelete):
            connection.info[_WROTE] = True


def has_uncommitted_writes(session: Session) -> bool:
    """Whether ``session`` holds changes, flushed or not, that its transaction has not yet
    committed: what a closing would roll back."""
    if session.new or session.dirty or session.deleted:
        return True
    return session.in_transaction() and bool(session.connection().info.get(_WROTE))


def writer_lock_path(database: str | Path) -> Path:
    """The file beside SQLite database ``database`` whose ``flock`` its writers queue on."""
    return Path(f"{database}-writer")


class _WriterLock:
    """SQLite has one writer at a time. Writers queue on this lock instead of polling the
    database's own lock, whose busy handler sleeps up to 100 ms between tries, far longer than
    a purchase holds it (docs/performance.md): threads of this process on a
    ``threading.Lock``, server processes sharing the file on an ``flock`` of ``path`` beside it,
    waited for in the kernel, which hands it over as soon as it is released (and releases it if
    its holder dies). A thread that waits for another of its process past the busy timeout goes
    on to SQLite's own lock, which still keeps writers apart."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._threads = threading.Lock()
        self._file: int | None = None  # opened in the process that uses it

    def acquire(self) -> bool:
        if not self._threads.acquire(timeout=SQLITE_BUSY_MS / 1000):
            return False
        try:
            if self._file is None:
                self._file = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
            # Blocking: polling for it cost more CPU than the sale (docs/performance.md).
            fcntl.flock(self._file, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        return True

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._threads.release()

    def close(self) -> None:
        """Close the lock file (reopened if the lock is taken again)."""
        with self._threads:
            if self._file is not None:
                os.close(self._file)
                self._file = None


def _sqlite_setup(engine: Engine, writer: _WriterLock) -> None:
    # A disposed engine keeps no file open: the filesystem can then be remounted read-only.
    event.listen(engine, "engine_disposed", lambda _engine: writer.close())

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver must not open transactions itself: we say BEGIN IMMEDIATE below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    # The connections holding the writer lock; not in their ``info``, which an invalidated
    # connection can no longer reach, so its rollback would not release the lock.
    holders: set[Any] = set()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        if connection.get_execution_options().get(READ_ONLY):
            return  # autocommit: each statement alone
        # Take the write lock at the start: a purchase never fails half-way on a busy upgrade.
        if writer.acquire():
            holders.add(connection)
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            _end(connection)
            raise

    # COMMIT and ROLLBACK are said here, before the lock is given back (the driver's own that
    # follow find nothing to do): the next writer then finds SQLite's lock free, not busy.
    @event.listens_for(engine, "commit")
    def _commit(connection: Any) -> None:
        _end(connection, "COMMIT")

    @event.listens_for(engine, "rollback")
    def _rollback(connection: Any) -> None:
        _end(connection, "ROLLBACK")

    def _end(connection: Any, statement: str | None = None) -> None:
        if connection not in holders:
            return
        try:
            if statement and not connection.invalidated and connection.connection.in_transaction:
                connection.exec_driver_sql(statement)
        finally:
            holders.discard(connection)
            writer.release()


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def make_reader(engine: Engine) -> Engine:
    """``engine`` for reads of one statement each, in autocommit: one round trip, and on
    SQLite beside the writer instead of after it. Nothing is to be written through it."""
    if engine.dialect.name == "sqlite":
        # Its connections are in autocommit already (we begin ourselves); READ_ONLY skips that.
        return engine.execution_options(**{READ_ONLY: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT", **{READ_ONLY: True})
