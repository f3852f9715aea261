"""What a database error means for the request that met it, on either database.

- :data:`Fault.RETRY`: the transaction lost a race and was rolled back whole (PostgreSQL's
  serialization failure or deadlock): running it again may succeed.
- :data:`Fault.UNAVAILABLE`: the database is away or cannot take writes now (connection lost
  or refused, a server shutting down or starting, a read-only standby, SQLite's disk full,
  read-only or busy past its timeout): nothing was committed; the same request may be tried
  again later.
- :data:`Fault.INVALID`: the database refused a value (out of its column's range, a NUL in a
  text): the request's fault, to be refused as such.
- :data:`Fault.BUG`: anything else.
"""

from __future__ import annotations

import enum

from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    InterfaceError,
    OperationalError,
    StatementError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeoutError


class Fault(enum.Enum):
    RETRY = "retry"
    UNAVAILABLE = "unavailable"
    INVALID = "invalid"
    BUG = "bug"


# PostgreSQL's SQLSTATEs (appendix A of its manual), by what they mean here.
_RETRY_STATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
_UNAVAILABLE_CLASSES = ("08", "57", "53")  # connection, operator intervention, resources
_UNAVAILABLE_STATES = frozenset({"25006"})  # read_only_sql_transaction: a standby
_INVALID_CLASS = "22"  # data exception
# SQLite's result codes that mean its file cannot be written or read now, or not in time.
_SQLITE_UNAVAILABLE = (
    "SQLITE_FULL",
    "SQLITE_READONLY",
    "SQLITE_IOERR",
    "SQLITE_CANTOPEN",
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
)


class DatabaseUnavailableError(Exception):
    """The database is away, or cannot take this write now; nothing was committed."""


class DatabaseRefusedValueError(Exception):
    """The database refused one of the request's values."""


def classify(exc: BaseException) -> Fault:
    """What ``exc``, raised by SQLAlchemy or the driver, means (see the module's docstring)."""
    if isinstance(exc, PoolTimeoutError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    ):
        return Fault.UNAVAILABLE  # no pooled connection in time, or the connection was lost
    original = exc.orig if isinstance(exc, StatementError) else exc
    state = getattr(original, "sqlstate", None)
    if isinstance(state, str):
        return _postgresql(state)
    name = getattr(original, "sqlite_errorname", None)
    if isinstance(name, str):
        return Fault.UNAVAILABLE if name.startswith(_SQLITE_UNAVAILABLE) else Fault.BUG
    if isinstance(exc, DataError) or isinstance(original, OverflowError):
        return Fault.INVALID  # a value the driver itself would not send
    if isinstance(exc, OperationalError | InterfaceError):
        return Fault.UNAVAILABLE  # the driver lost or could not make its connection
    return Fault.BUG


def _postgresql(state: str) -> Fault:
    if state in _RETRY_STATES:
        return Fault.RETRY
    if state in _UNAVAILABLE_STATES or state.startswith(_UNAVAILABLE_CLASSES):
        return Fault.UNAVAILABLE
    return Fault.INVALID if state.startswith(_INVALID_CLASS) else Fault.BUG
