"""Engine set-up and migrations, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, inspect, select, text
from sqlalchemy.exc import StatementError

from pharaon.store.engine import DatabaseUrlError, make_engine, normalise_url
from pharaon.store.migrate import is_current, upgrade
from pharaon.store.tables import OPERATOR_ACCOUNTS, Account, Base, LedgerTransaction


def test_upgrade_creates_every_table_once(engine: Engine) -> None:
    assert is_current(engine)
    upgrade(engine)  # a second time changes nothing
    names = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= names
    with engine.connect() as conn:
        accounts = conn.execute(select(Account.id, Account.kind).order_by(Account.id)).all()
    assert [tuple(a) for a in accounts] == list(OPERATOR_ACCOUNTS.items())


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
