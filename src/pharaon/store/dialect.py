"""What SQLite and PostgreSQL say differently, said once here: the services write one SQL for
both and ask this module where the two part (an upsert, rows passed as one parameter, a bulk
copy, a day of a timestamp, a lock once per deployment)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    JSON,
    Connection,
    any_,
    bindparam,
    column,
    func,
    literal_column,
    select,
    type_coerce,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import FromClause
from sqlalchemy.types import TypeEngine

Statement = TypeVar("Statement")


@dataclass(frozen=True, slots=True)
class Parts:
    """The parts of SQL a statement takes from its dialect.

    - ``insert(table)``: the dialect's INSERT, which knows ``ON CONFLICT``;
    - ``rows(name, **columns)``: a table of rows passed as one parameter ``name`` (a list of
      dicts, one per row, keyed by the ``columns``' names, whose values are their SQL types),
      so that a batch's statement has the same text whatever the batch's size: the driver and
      the database parse and plan it once (``json_to_recordset`` on PostgreSQL, ``json_each``
      on SQLite);
    - ``one_of(column, name)``: ``column`` is one of the values (of its type) of the list
      passed as the parameter ``name``. A statement that joins ``rows`` to a table is planned
      for the 100 rows PostgreSQL assumes a function returns, so the plan kept for the
      connection reads the whole table (a hash join) until the table is large;
      ``= ANY(array)`` is planned for a few rows, found by the index.
    """

    insert: Callable[[Any], Any]  # returns the dialect's Insert, with on_conflict_do_*()
    rows: Callable[..., FromClause]
    one_of: Callable[[Any, str], ColumnElement[bool]]


def _postgresql_rows(name: str, **columns: TypeEngine[Any]) -> FromClause:
    return (
        func.json_to_recordset(bindparam(name, type_=JSON))
        .table_valued(*[column(c, t) for c, t in columns.items()])
        .render_derived(name=name, with_types=True)
    )


def _sqlite_rows(name: str, **columns: TypeEngine[Any]) -> FromClause:
    each = func.json_each(bindparam(name, type_=JSON)).table_valued("value").alias(f"{name}_each")
    return (
        select(
            *[
                type_coerce(func.json_extract(each.c.value, literal_column(f"'$.{c}'")), t).label(c)
                for c, t in columns.items()
            ]
        )
        .select_from(each)
        .subquery(name)
    )


def _postgresql_one_of(column_: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    return column_ == any_(bindparam(name, type_=postgresql.ARRAY(column_.type)))


def _sqlite_one_of(column_: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    each = func.json_each(bindparam(name, type_=JSON)).table_valued("value")
    return column_.in_(select(each.c.value))


_PARTS = {
    "postgresql": Parts(postgresql.insert, _postgresql_rows, _postgresql_one_of),
    "sqlite": Parts(sqlite.insert, _sqlite_rows, _sqlite_one_of),
}


class PerDialect(Generic[Statement]):
    """A statement written once, from the parts of SQL each dialect says its own way
    (:class:`Parts`): built once per dialect (it runs on hot paths), picked by the
    connection."""

    def __init__(self, build: Callable[[Parts], Statement]) -> None:
        self._built = {name: build(parts) for name, parts in _PARTS.items()}

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


def utc_day(connection: Connection, column_: Any) -> ColumnElement[str]:
    """``column_``'s UTC day as ``YYYY-MM-DD`` text (SQLite keeps naive UTC text, see
    ``UTCDateTime``; PostgreSQL a timestamptz)."""
    if connection.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", column_), "YYYY-MM-DD")
    return func.substr(column_, 1, 10)


# The keys of PostgreSQL's advisory locks: what happens once per deployment, whichever server
# starts first, waits on these.
ADVISORY_LOCKS = {"migrations": 0x50_4841_0001, "first start": 0x50_4841_0002}


def once_per_deployment(connection: Connection, what: str) -> None:
    """Wait, in the caller's transaction, until no other server does ``what`` (a key of
    :data:`ADVISORY_LOCKS`); held until that transaction ends. On PostgreSQL an advisory
    lock; SQLite's write transaction already keeps every other writer out."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCKS[what]})")
