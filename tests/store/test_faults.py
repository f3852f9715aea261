"""What a database error means (store/faults.py), on both databases' own errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DataError, DBAPIError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from pharaon.store.faults import Fault, classify


def _wrapped(original: Exception) -> OperationalError:
    return OperationalError("SELECT 1", {}, original)


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (psycopg.errors.SerializationFailure(), Fault.RETRY),
        (psycopg.errors.DeadlockDetected(), Fault.RETRY),
        (psycopg.errors.ReadOnlySqlTransaction(), Fault.UNAVAILABLE),  # a standby
        (psycopg.errors.AdminShutdown(), Fault.UNAVAILABLE),
        (psycopg.errors.CannotConnectNow(), Fault.UNAVAILABLE),  # starting up
        (psycopg.errors.TooManyConnections(), Fault.UNAVAILABLE),
        (psycopg.errors.NumericValueOutOfRange(), Fault.INVALID),
        (psycopg.errors.UndefinedTable(), Fault.BUG),
        (psycopg.OperationalError("connection refused"), Fault.UNAVAILABLE),
    ],
)
def test_postgresql_errors(error: Exception, fault: Fault) -> None:
    assert classify(_wrapped(error)) is fault


def test_a_pool_with_no_connection_in_time_is_unavailable() -> None:
    assert classify(PoolTimeoutError("QueuePool limit reached")) is Fault.UNAVAILABLE


def test_a_value_the_driver_refuses_is_invalid() -> None:
    assert classify(DataError("INSERT", {}, ValueError("NUL"))) is Fault.INVALID


def _sqlite_error(database: Path, statement: str) -> sqlite3.Error:
    with sqlite3.connect(database) as connection:
        try:
            connection.execute(statement)
        except sqlite3.Error as exc:
            return exc
    raise AssertionError(f"{statement} did not fail")


def test_sqlite_errors(tmp_path: Path) -> None:
    database = tmp_path / "x.db"
    sqlite3.connect(database).close()
    database.chmod(0o444)
    read_only = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as refused:
            read_only.execute("CREATE TABLE t (x)")
    finally:
        read_only.close()
    assert classify(_wrapped(refused.value)) is Fault.UNAVAILABLE  # SQLITE_READONLY
    syntax = _sqlite_error(tmp_path / "y.db", "SELEC 1")
    assert classify(ProgrammingError("SELEC 1", {}, syntax)) is Fault.BUG


def test_a_real_bug_is_a_bug(engine: Engine) -> None:
    with pytest.raises(DBAPIError) as failed, engine.connect() as connection:
        connection.execute(text("SELECT * FROM no_such_table"))
    assert classify(failed.value) is Fault.BUG
