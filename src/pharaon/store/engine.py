"""Engines for SQLite (WAL, synchronous=FULL, one writer) and PostgreSQL (psycopg 3), and the
two kinds of transaction the rest of the program opens on them: a write, and a read.

- A *write* transaction (an engine of :func:`make_engine`) begins ``BEGIN IMMEDIATE`` on
  SQLite, so that a writer holds SQLite's one write lock from its first statement and never
  fails half-way on a busy upgrade; on PostgreSQL it is READ COMMITTED, with the rows a writer
  changes locked ``FOR UPDATE`` in one order by every writer.
- A *read* transaction (an engine of :func:`make_engine` with ``reading``: a pool of its own,
  whose connections only read) sees one snapshot and writes nothing: a deferred ``BEGIN`` on
  SQLite (in WAL, beside the writer, never after it), ``REPEATABLE READ READ ONLY`` on
  PostgreSQL.

SQLite has one writer at a time. A server process keeps to it by sending all its writes
through one door (``web/database.py``); :func:`writers_at_once` says so. Other processes
(a command line beside the server) wait on SQLite's own lock, up to the busy timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_MS = 30_000
# A PostgreSQL that accepts the connection but never answers would hold a connect (and the
# thread waiting on it) for ever; the URL's own connect_timeout, if any, wins.
POSTGRES_CONNECT_SECONDS = 5


class DatabaseUrlError(ValueError):
    """A database URL this program cannot use."""


def normalise_url(url: str) -> str:
    """The SQLAlchemy URL for ``url``, in either form PostgreSQL documents: a libpq URL
    (``postgresql://`` means psycopg 3, and a multi-host ``host1:5432,host2:5432`` list is
    kept for libpq, which tries each host in turn) or a SQLAlchemy one."""
    try:
        parsed = make_url(_hosts_in_query(url))
    except Exception as exc:
        raise DatabaseUrlError(f"not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif backend != "sqlite":
        raise DatabaseUrlError(f"database must be sqlite or postgresql, got {backend!r}")
    return parsed.render_as_string(hide_password=False)


def _hosts_in_query(url: str) -> str:
    """A libpq URL with several hosts in its authority (``user@h1:5432,h2:5433/db``) in the
    form SQLAlchemy reads, the hosts as ``host`` query parameters; any other URL unchanged."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.startswith("postgres"):
        return url
    authority, _, tail = rest.partition("/")
    user, at, hosts = authority.rpartition("@")
    if "," not in hosts:
        return url
    path, _, query = tail.partition("?")
    listed = "&".join(f"host={host}" for host in hosts.split(",") if host)
    query = f"{query}&{listed}" if query else listed
    return f"{scheme}://{user}{at}/{path}?{query}"


def is_sqlite(url: str | URL | Engine) -> bool:
    """Whether ``url`` (or an engine's) is a SQLite database."""
    if isinstance(url, Engine):
        return url.dialect.name == "sqlite"
    if isinstance(url, str):
        url = normalise_url(url)  # a libpq multi-host URL too
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(
    url: str, *, pool_size: int = 10, create: bool = True, reading: bool = False
) -> Engine:
    """An engine for ``url``: for write transactions, or with ``reading`` for read ones (see
    the module's docstring). A SQLite file must exist unless ``create`` (then it is made, with
    its folder)."""
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed, pool_size=pool_size, create=create, reading=reading)
    timeout = (
        {} if "connect_timeout" in parsed.query else {"connect_timeout": POSTGRES_CONNECT_SECONDS}
    )
    # No pre-ping: it would cost a round trip per checkout. A connection found lost is
    # discarded with every other connection of the pool opened before it (SQLAlchemy's own
    # handling), and one waits for a pooled connection no longer than for a new one.
    engine = create_engine(
        url,
        hide_parameters=True,  # an error's text never carries a request's values (e-mails)
        connect_args=timeout,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=1800,
        pool_timeout=POSTGRES_CONNECT_SECONDS,
        **({"isolation_level": "REPEATABLE READ"} if reading else {}),
    )
    if reading:
        # Set once per connection (SQLAlchemy's per-transaction read-only option would set the
        # writers' connections READ WRITE again, which a standby refuses at BEGIN).
        event.listen(engine, "connect", _reads_only)
    event.listen(engine, "handle_error", _standby_is_gone)
    return engine


def _reads_only(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.read_only = True


# A server that takes no writes any more (a primary turned standby after a failover) or is
# shutting down: its connections are dropped like lost ones, so the next connect finds the
# new primary (a multi-host URL's target_session_attrs=read-write, or the proxy).
_GONE_STATES = frozenset({"25006", "57P01", "57P02", "57P03"})


def _standby_is_gone(context: Any) -> None:
    if getattr(context.original_exception, "sqlstate", None) in _GONE_STATES:
        context.is_disconnect = True


def _sqlite_engine(url: str, parsed: URL, *, pool_size: int, create: bool, reading: bool) -> Engine:
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        raise DatabaseUrlError("SQLite needs a file: sqlite:///path/to/pharaon.db")
    folder = Path(database).parent
    if reading:
        pass  # a reader makes nothing: a database not there fails at the connect
    elif create:
        folder.mkdir(parents=True, exist_ok=True)
    elif not Path(database).is_file():
        # A mistyped path is an error, not a new empty database (and a server on it).
        raise DatabaseUrlError(
            f"no SQLite database {database}: make one with `pharaon db upgrade --create`"
        )
    engine = create_engine(
        url,
        hide_parameters=True,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_MS / 1000},
        pool_size=pool_size,
        max_overflow=pool_size,
    )
    # Rows inserted together go in one INSERT, not one step each: the driver gives up the GIL
    # at each step and the writer, holding the lock, waits to get it back.
    engine.dialect.use_insertmanyvalues_wo_returning = True

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver must not open transactions itself: they begin below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        if reading:
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    # A writer takes SQLite's write lock at once; a reader takes a snapshot at its first read,
    # beside the writer.
    begin = "BEGIN" if reading else "BEGIN IMMEDIATE"

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql(begin)

    return engine


def writers_at_once(engine: Engine) -> int | None:
    """How many write transactions may run at once on ``engine``'s database: 1 for SQLite,
    whose writers take turns; None (no limit but the pool's) for PostgreSQL."""
    return 1 if is_sqlite(engine) else None


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions for write transactions (and the command line's reads)."""
    return sessionmaker(engine, expire_on_commit=False)


def make_reader(engine: Engine, *, pool_size: int = 10) -> Engine:
    """An engine for read transactions on ``engine``'s database (its own pool: dispose of it
    too)."""
    url = engine.url.render_as_string(hide_password=False)
    return make_engine(url, pool_size=pool_size, reading=True)


def check_file(engine: Engine) -> None:
    """``OSError`` if ``engine``'s SQLite file is no longer at its path (a pooled connection
    goes on reading and writing a removed file); nothing for PostgreSQL."""
    if is_sqlite(engine) and engine.url.database:
        Path(engine.url.database).stat()
