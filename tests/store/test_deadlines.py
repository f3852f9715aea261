"""Deadlines on what a connection runs (store/deadlines.py), on both databases: work still
running at its deadline is cancelled and its watch says so; work done in time is left alone,
and so is the connection's next work, whatever the time."""

from __future__ import annotations

import sqlite3
import time

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, OperationalError

from pharaon.store.deadlines import Watchdog
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.store.transactions import Transactions

# A statement that runs for seconds on each database.
_LONG = {
    "postgresql": "SELECT pg_sleep(5)",
    "sqlite": (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000000) "
        "SELECT count(*) FROM n"
    ),
}


def test_a_statement_past_its_deadline_is_cancelled(engine: Engine) -> None:
    watchdog = Watchdog()
    with engine.connect() as connection:
        dbapi = connection.connection.dbapi_connection
        started = time.monotonic()
        with (
            pytest.raises((OperationalError, DBAPIError)),
            watchdog.watch(dbapi, 0.5) as watch,
        ):
            connection.execute(text(_LONG[engine.dialect.name]))
        took = time.monotonic() - started
        assert watch.overdue
        assert took < 4, took  # cancelled, not finished: it runs for 5 s or more
        connection.rollback()
        assert connection.execute(text("SELECT 1")).scalar_one() == 1  # the connection serves


def test_work_done_in_time_and_the_next_are_left_alone(engine: Engine) -> None:
    watchdog = Watchdog()
    with engine.connect() as connection:
        dbapi = connection.connection.dbapi_connection
        with watchdog.watch(dbapi, 0.3) as watch:
            assert connection.execute(text("SELECT 1")).scalar_one() == 1
        assert not watch.overdue
        time.sleep(0.6)  # its deadline passed: nothing is sent to the connection's next work
        sleep = "SELECT pg_sleep(0.3)" if engine.dialect.name == "postgresql" else "SELECT 1"
        connection.execute(text(sleep))
        connection.rollback()


def test_a_transaction_past_its_deadline_is_unavailable_and_rolled_back(engine: Engine) -> None:
    transactions = Transactions(engine, deadline=0.5)
    long = _LONG[engine.dialect.name]
    with pytest.raises(DatabaseUnavailableError, match="within the deadline"):
        transactions.write(
            lambda session: (
                session.execute(text("CREATE TABLE was_here (n INTEGER)")),
                session.execute(text(long)),
            )
        )
    with engine.connect() as connection:  # rolled back: the table was never made
        names = connection.execute(
            text(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'was_here'"
                if engine.dialect.name == "postgresql"
                else "SELECT count(*) FROM sqlite_master WHERE name = 'was_here'"
            )
        ).scalar_one()
    assert names == 0
    # The same, with no deadline: it runs to its end.
    patient = Transactions(engine)
    assert patient.read(lambda connection: connection.execute(text("SELECT 2")).scalar_one()) == 2
    patient.close()
    transactions.close()


def test_the_cancel_of_sqlite_is_its_interrupt() -> None:
    watchdog = Watchdog()
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    with (
        pytest.raises(sqlite3.OperationalError, match="interrupted"),
        watchdog.watch(connection, 0.2) as watch,
    ):
        connection.execute(_LONG["sqlite"]).fetchall()
    assert watch.overdue
    connection.close()
