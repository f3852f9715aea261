"""Engine set-up and migrations, on SQLite and PostgreSQL."""

from __future__ import annotations

import socket
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, insert, inspect, select, text
from sqlalchemy import create_engine as real_create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError, StatementError

from pharaon.service.clock import utcnow
from pharaon.store import engine as engine_module
from pharaon.store.engine import (
    POSTGRES_CONNECT_SECONDS,
    DatabaseUrlError,
    make_engine,
    make_reader,
    make_sessionmaker,
    normalise_url,
)
from pharaon.store.migrate import downgrade, is_current, upgrade
from pharaon.store.tables import OPERATOR_ACCOUNTS, Account, Base, LedgerTransaction


def test_upgrade_creates_every_table_once(engine: Engine) -> None:
    assert is_current(engine)
    upgrade(engine)  # a second time changes nothing
    names = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= names
    with engine.connect() as conn:
        accounts = conn.execute(select(Account.id, Account.kind).order_by(Account.id)).all()
    assert [tuple(a) for a in accounts] == list(OPERATOR_ACCOUNTS.items())


def test_the_schema_migrates_down_and_up(engine: Engine) -> None:
    downgrade(engine, "base")
    assert not is_current(engine)
    assert not set(Base.metadata.tables) & set(inspect(engine).get_table_names())
    upgrade(engine)
    assert is_current(engine)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())


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


@pytest.mark.parametrize(
    ("url", "sqlalchemy_url"),
    [
        (
            "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
            "postgresql+psycopg://u@/db?target_session_attrs=read-write&host=h1:5432&host=h2:5433",
        ),
        ("postgresql://u:p@h1,h2/db", "postgresql+psycopg://u:p@/db?host=h1&host=h2"),
        (
            "postgresql+psycopg://u@/db?host=h1:5432&host=h2:5433",
            "postgresql+psycopg://u@/db?host=h1:5432&host=h2:5433",
        ),
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
    ],
)
def test_both_forms_of_url_and_several_hosts(url: str, sqlalchemy_url: str) -> None:
    """A libpq URL, several hosts included (what a client of a replicated PostgreSQL uses),
    or SQLAlchemy's own form."""
    assert make_url(normalise_url(url)) == make_url(sqlalchemy_url)


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_multi_host_url_reaches_the_host_that_answers(database_url: str) -> None:
    """libpq tries the hosts in turn: one where nothing listens, then the test database."""
    url = make_url(normalise_url(database_url))
    nowhere = socket.create_server(("127.0.0.1", 0))
    closed_port = nowhere.getsockname()[1]
    nowhere.close()
    hosts = (f"127.0.0.1:{closed_port}", f"{url.host}:{url.port or 5432}")
    several = url.set(host=None, port=None).update_query_pairs([("host", h) for h in hosts])
    engine = make_engine(several.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        engine.dispose()


@pytest.mark.parametrize("where", ["no/such/p.db", "p.db"])
def test_a_sqlite_database_not_there_is_refused_unless_made(where: str, tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / where}"
    with pytest.raises(DatabaseUrlError, match=r"no SQLite database .*db upgrade --create"):
        make_engine(missing, create=False)
    assert list(tmp_path.iterdir()) == []
    make_engine(missing).dispose()
    assert (tmp_path / where).parent.is_dir()


def test_a_reader_reads_beside_a_writer(engine: Engine) -> None:
    reader = make_reader(engine)
    try:
        with make_sessionmaker(engine)() as writer:
            writer.execute(insert(LedgerTransaction).values(kind="open", created_at=utcnow()))
            # The write transaction is still open; a reader neither waits nor sees it.
            with reader.connect() as connection, connection.begin():
                count = connection.execute(select(LedgerTransaction.id)).all()
            assert count == []
            writer.commit()
        with reader.connect() as connection, connection.begin():
            assert len(connection.execute(select(LedgerTransaction.id)).all()) == 1
        # ... and only reads.
        refused = insert(LedgerTransaction).values(kind="no", created_at=utcnow())
        with (
            pytest.raises(DBAPIError, match=r"read-only|readonly"),
            reader.connect() as connection,
            connection.begin(),
        ):
            connection.execute(refused)
    finally:
        reader.dispose()


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
