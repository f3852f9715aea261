"""What SQLite and PostgreSQL say differently, said once here: the services write one SQL for
both and ask this module where the two part (an upsert, a bulk copy, a day of a timestamp)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

Statement = TypeVar("Statement")
# ``insert(table)`` of the dialect: the INSERT that knows ON CONFLICT.
Insert = Callable[[Any], Any]


class OnConflict(Generic[Statement]):
    """A statement with ``INSERT ... ON CONFLICT``, which each dialect builds with its own
    ``insert``: built once per dialect (it runs on hot paths), picked by the connection."""

    def __init__(self, build: Callable[[Insert], Statement]) -> None:
        self._built = {"postgresql": build(postgresql.insert), "sqlite": build(sqlite.insert)}

    def on(self, connection: Connection) -> Statement:
        """The statement for ``connection``'s database."""
        return self._built[connection.dialect.name]


def copy_rows(
    connection: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """Insert ``rows`` (values in ``columns``' order) into ``table`` in the caller's
    transaction, as fast as the database takes them: COPY on PostgreSQL, one prepared INSERT
    run over the rows on SQLite."""
    raw: Any = connection.connection.dbapi_connection
    names = ", ".join(columns)
    if connection.dialect.name == "postgresql":
        with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    cursor = raw.cursor()
    try:
        marks = ", ".join("?" for _ in columns)
        cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
    finally:
        cursor.close()


def utc_day(connection: Connection, column: Any) -> ColumnElement[str]:
    """``column``'s UTC day as ``YYYY-MM-DD`` text (SQLite keeps naive UTC text, see
    ``UTCDateTime``; PostgreSQL a timestamptz)."""
    if connection.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD")
    return func.substr(column, 1, 10)


# The keys of PostgreSQL's advisory locks: what happens once per deployment, whichever server
# starts first, waits on these.
ADVISORY_LOCKS = {"migrations": 0x50_4841_0001, "first start": 0x50_4841_0002}


def once_per_deployment(connection: Connection, what: str) -> None:
    """Wait, in the caller's transaction, until no other server does ``what`` (a key of
    :data:`ADVISORY_LOCKS`); held until that transaction ends. On PostgreSQL an advisory
    lock; SQLite's write transaction already keeps every other writer out."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCKS[what]})")
