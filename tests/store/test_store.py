"""Engine set-up and migrations, on SQLite and PostgreSQL."""

from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, insert, inspect, select, text
from sqlalchemy import create_engine as real_create_engine
from sqlalchemy.exc import OperationalError, StatementError

from pharaon.service.clock import utcnow
from pharaon.store import engine as engine_module
from pharaon.store.engine import (
    POSTGRES_CONNECT_SECONDS,
    DatabaseUrlError,
    make_engine,
    make_reader,
    make_sessionmaker,
    normalise_url,
    writer_lock_path,
)
from pharaon.store.migrate import downgrade, is_current, upgrade
from pharaon.store.tables import OPERATOR_ACCOUNTS, Account, Base, LedgerTransaction
from tests.service.helpers import another_writer


def test_upgrade_creates_every_table_once(engine: Engine) -> None:
    assert is_current(engine)
    upgrade(engine)  # a second time changes nothing
    names = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= names
    with engine.connect() as conn:
        accounts = conn.execute(select(Account.id, Account.kind).order_by(Account.id)).all()
    assert [tuple(a) for a in accounts] == list(OPERATOR_ACCOUNTS.items())


def _has_sell_function(engine: Engine) -> bool:
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT count(*) FROM pg_proc WHERE proname = 'pharaon_sell' "
                "AND pronamespace = current_schema()::regnamespace"
            )
        )
        return bool(found.scalar_one())


def test_the_sell_function_migrates_down_and_up(engine: Engine) -> None:
    on_postgres = engine.dialect.name == "postgresql"
    assert _has_sell_function(engine) == on_postgres
    downgrade(engine, "0001")
    assert not is_current(engine)
    assert not _has_sell_function(engine)
    upgrade(engine)
    assert is_current(engine)
    assert _has_sell_function(engine) == on_postgres


def test_a_fresh_database_is_not_current(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        assert not is_current(engine)
    finally:
        engine.dispose()


def test_sqlite_is_durable(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'new' / 'folder' / 'p.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_times_are_aware_utc(engine: Engine) -> None:
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT loaded_at FROM blocks")).all()
    assert stored == []
    with pytest.raises(StatementError, match="naive datetime"), engine.begin() as conn:
        conn.execute(insert(LedgerTransaction).values(kind="x", created_at=datetime(2020, 1, 1)))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://x@y/z", "sqlite or postgresql"),
        ("nonsense", "not a database URL"),
        ("sqlite://", "SQLite needs a file"),
        ("sqlite:///:memory:", "SQLite needs a file"),
    ],
)
def test_bad_urls(url: str, problem: str) -> None:
    with pytest.raises(DatabaseUrlError, match=problem):
        make_engine(url)


def test_postgresql_means_psycopg() -> None:
    assert normalise_url("postgresql://u@h/d").startswith("postgresql+psycopg://")


def test_sqlite_writers_of_other_processes_queue_on_a_lock_file(tmp_path: Path) -> None:
    """A writer waits while another process holds the writer lock beside the database, asleep
    in the kernel (no CPU spent polling), and goes on as soon as it is released (an flock:
    the kernel hands it over)."""
    database = tmp_path / "queue.db"
    engine = make_engine(f"sqlite:///{database}")
    upgrade(engine)
    done = threading.Event()

    def write() -> None:
        with make_sessionmaker(engine)() as session:
            session.execute(insert(LedgerTransaction).values(kind="test", created_at=utcnow()))
            session.commit()
        done.set()

    try:
        with another_writer(engine):
            writer = threading.Thread(target=write)
            writer.start()
            assert not done.wait(0.2)
            assert writer.ident is not None
            clock = time.pthread_getcpuclockid(writer.ident)
            cpu = time.clock_gettime(clock)
            assert not done.wait(1.0)
            # Trying again every 0.1 ms used 150 ms of CPU a second of waiting here; asleep, none.
            assert time.clock_gettime(clock) - cpu < 0.01
        assert done.wait(30)
        writer.join()
    finally:
        engine.dispose()


# Another server process's writer: it commits and at once begins its next transaction, as a
# busy sales desk does, until the file ``stop`` exists (or a minute has passed); through the
# writer lock, or ("sqlite") through SQLite's own lock alone, nothing between COMMIT and BEGIN.
_BACK_TO_BACK = """
import sqlite3, sys, time
from pathlib import Path
from pharaon.store.engine import make_engine
database, hold, stop, how = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
deadline = time.monotonic() + 60
if how == "sqlite":
    writer = sqlite3.connect(database, timeout=30, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    while not stop.exists() and time.monotonic() < deadline:
        writer.execute("INSERT INTO turns (who) VALUES ('other')")
        time.sleep(hold)
        writer.execute("COMMIT")
        writer.execute("BEGIN IMMEDIATE")
    writer.execute("COMMIT")
else:
    engine = make_engine(f"sqlite:///{database}")
    while not stop.exists() and time.monotonic() < deadline:
        with engine.begin() as connection:
            connection.exec_driver_sql("INSERT INTO turns (who) VALUES ('other')")
            time.sleep(hold)
    engine.dispose()
"""


def _asks_beside_a_writer_of_another_process(
    database: Path, monkeypatch: pytest.MonkeyPatch, *, lock: bool
) -> list[Any]:
    """Five writes of this process, each asked for while another process writes back to back,
    both through the writer lock or both without it: for each, how many of the other's
    transactions went before it, or the error that failed it."""
    if not lock:  # make_engine's path when the lock is not taken: BEGIN IMMEDIATE alone
        monkeypatch.setattr(engine_module._WriterLock, "acquire", lambda _self: False)
    engine = make_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE turns (id INTEGER PRIMARY KEY, who TEXT)")
    stop = database.with_name(f"{database.name}-stop")
    how = "lock" if lock else "sqlite"
    other = subprocess.Popen(
        [sys.executable, "-c", _BACK_TO_BACK, str(database), "0.05", str(stop), how]
    )
    reader = make_reader(engine)
    outcomes: list[Any] = []
    try:
        with reader.connect() as connection:
            count = "SELECT count(*) FROM turns"
            while connection.exec_driver_sql(count).scalar_one() < 2:  # it is writing
                assert other.poll() is None, "the other process stopped"
                time.sleep(0.01)
        for _ in range(5):
            with reader.connect() as connection:
                last = connection.exec_driver_sql("SELECT max(id) FROM turns").scalar_one()
            try:
                with engine.begin() as connection:
                    mine = connection.exec_driver_sql("INSERT INTO turns (who) VALUES ('me')")
                outcomes.append(mine.lastrowid - last - 1)
            except OperationalError as exc:
                outcomes.append(str(exc.orig))
        assert other.poll() is None, "the other process stopped writing"
    finally:
        stop.touch()
        try:
            other.wait(30)
        finally:
            if other.poll() is None:
                other.kill()
                other.wait()
            engine.dispose()
    return outcomes


def test_a_sqlite_writer_gets_its_turn_beside_another_process_writing_back_to_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the writer lock fixes: a writer that waits in SQLite's busy handler sleeps up to
    100 ms between tries and misses the moment another process's writer commits and begins
    again, until its busy timeout fails it ("database is locked"); queued on the lock, it is
    woken at that moment (usually only the transaction the other was in goes first)."""
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_MS", 500)  # the busy timeout, shortened
    queued = _asks_beside_a_writer_of_another_process(tmp_path / "q.db", monkeypatch, lock=True)
    # In while the other kept writing: ten of its 50 ms transactions outlast the busy timeout.
    assert all(isinstance(ahead, int) and ahead < 10 for ahead in queued), queued
    # The same writes with SQLite's own lock alone: starved. A try can get in by luck, if one of
    # its polls falls between the other's transactions; five in a row almost never do.
    polling = _asks_beside_a_writer_of_another_process(tmp_path / "p.db", monkeypatch, lock=False)
    assert "database is locked" in polling, polling


def _writer_lock_is_free(database: Path) -> bool:
    other = os.open(writer_lock_path(database), os.O_RDWR)  # another open file: another holder
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(other, fcntl.LOCK_UN)
        return True
    finally:
        os.close(other)


def test_a_sqlite_writer_invalidated_mid_transaction_releases_the_writer_lock(
    tmp_path: Path,
) -> None:
    """A connection lost in a write (SQLAlchemy invalidates it on a disconnect, or on an
    interrupt in a statement) gives the writer lock back when its transaction is rolled back;
    otherwise every later writer would wait out the busy timeout (30 s), and disposing of the
    engine would wait for ever."""
    database = tmp_path / "lost.db"
    engine = make_engine(f"sqlite:///{database}")
    upgrade(engine)
    try:
        with engine.connect() as connection:
            connection.begin()
            connection.execute(insert(LedgerTransaction).values(kind="test", created_at=utcnow()))
            assert not _writer_lock_is_free(database)
            connection.invalidate()
            connection.rollback()
            assert _writer_lock_is_free(database)
        with make_sessionmaker(engine).begin() as session:  # the next writer goes on
            session.execute(insert(LedgerTransaction).values(kind="test", created_at=utcnow()))
        with engine.connect() as connection:
            kinds = connection.execute(select(LedgerTransaction.kind)).scalars().all()
        assert kinds.count("test") == 1  # the lost write was rolled back
    finally:
        disposer = threading.Thread(target=engine.dispose, daemon=True)
        disposer.start()
        disposer.join(30)
    assert not disposer.is_alive(), "disposing of the engine waits for the writer lock"


def test_a_sqlite_writer_gives_the_lock_back_once_its_commit_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given back before COMMIT, the lock would wake the next writer into SQLite's lock, still
    held, and its busy handler's sleeps: the lock would hand over no faster than SQLite."""
    database = tmp_path / "handover.db"
    engine = make_engine(f"sqlite:///{database}")
    upgrade(engine)
    free_at_release: list[bool] = []
    release = engine_module._WriterLock.release

    def release_and_look(lock: Any) -> None:
        other = sqlite3.connect(database, isolation_level=None, timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")  # what the next writer does first
            other.execute("ROLLBACK")
            free_at_release.append(True)
        except sqlite3.OperationalError:
            free_at_release.append(False)
        finally:
            other.close()
        release(lock)

    monkeypatch.setattr(engine_module._WriterLock, "release", release_and_look)
    try:
        for _ in range(3):
            with make_sessionmaker(engine).begin() as session:
                session.execute(insert(LedgerTransaction).values(kind="test", created_at=utcnow()))
        with make_sessionmaker(engine)() as session:
            session.execute(insert(LedgerTransaction).values(kind="lost", created_at=utcnow()))
            session.rollback()
        assert free_at_release == [True] * 4  # three commits, then a rollback
    finally:
        monkeypatch.undo()
        engine.dispose()
    reader = make_engine(f"sqlite:///{database}")
    try:
        with reader.connect() as connection:
            kinds = connection.execute(select(LedgerTransaction.kind)).scalars().all()
    finally:
        reader.dispose()
    assert kinds.count("test") == 3  # committed, once each
    assert "lost" not in kinds


def test_a_reader_reads_beside_a_sqlite_writer(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'read.db'}")
    upgrade(engine)
    try:
        with make_sessionmaker(engine)() as writer:
            writer.execute(insert(LedgerTransaction).values(kind="open", created_at=utcnow()))
            # The write transaction is still open; a reader neither waits nor sees it.
            with make_reader(engine).connect() as reader:
                count = reader.execute(select(LedgerTransaction.id)).all()
            assert count == []
            writer.commit()
        with make_reader(engine).connect() as reader:
            assert len(reader.execute(select(LedgerTransaction.id)).all()) == 1
    finally:
        engine.dispose()


def test_a_postgresql_that_never_answers_fails_the_connect_in_time() -> None:
    # A socket that accepts connections and says nothing: without a connect timeout, the
    # connect (and any health check thread behind it) would wait for ever.
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    engine = make_engine(f"postgresql://nobody@127.0.0.1:{port}/none")
    failed: list[BaseException] = []

    def connect() -> None:
        try:
            engine.connect().close()
        except OperationalError as exc:
            failed.append(exc)

    try:
        attempt = threading.Thread(target=connect, daemon=True)
        attempt.start()
        attempt.join(timeout=POSTGRES_CONNECT_SECONDS + 25)
        assert not attempt.is_alive(), "the connect still waits"
        assert len(failed) == 1
    finally:
        silent.close()
        engine.dispose()


def test_the_urls_own_connect_timeout_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    def create_engine(_url: str, **kw: Any) -> Engine:
        made.append(kw)
        return real_create_engine("sqlite://")  # not connected to: only its arguments count

    monkeypatch.setattr(engine_module, "create_engine", create_engine)
    make_engine("postgresql://nobody@127.0.0.1:1/none?connect_timeout=9")
    make_engine("postgresql://nobody@127.0.0.1:1/none")
    assert [kw["connect_args"] for kw in made] == [{}, {"connect_timeout": 5}]
