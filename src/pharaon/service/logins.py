"""The lock-out of log-ins, players' and operators': failures counted under keys (an account's
email, a client address) in ``login_failures``, decided in the database.

A log-in counts as a failure of its account *before* its password is checked (:func:`begin`),
in a transaction that locks the key's row, so that however many servers take log-ins at once no
more than the allowed number of passwords is ever checked for an account between two
lock-outs: the attempt that finds the count already at its most locks the account out instead,
and is refused. A success clears the account's count (:func:`succeeded`). An address counts
its failures once they are known (:func:`failed`), so that many people behind one address may
log in at the same moment; it is locked out the same way once its count is at its most.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from pharaon.service.errors import LockedOutError
from pharaon.store.dialect import PerDialect
from pharaon.store.tables import LoginFailure

_ENSURE_ROW = PerDialect(
    lambda sql: (
        sql.insert(LoginFailure)
        .values(failures=0, locked_until=None)
        .on_conflict_do_nothing(index_elements=["key"])
    )
)
_LOCK_ROWS = (
    select(LoginFailure.key, LoginFailure.failures, LoginFailure.locked_until)
    .order_by(LoginFailure.key)
    .with_for_update()
)


@dataclass(frozen=True, slots=True)
class Throttle:
    """How many failures lock a key out, and for how long: ``per_account`` for an account's
    key, ``per_address`` for a client address's (credential stuffing across accounts)."""

    per_account: int = 5
    per_address: int = 20
    lockout: timedelta = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class Keys:
    """The rows a log-in counts under: its account's, and its client address's if known."""

    account: str
    address: str | None

    def limits(self, throttle: Throttle) -> dict[str, int]:
        """The most failures of each key before it locks."""
        most = {self.account: throttle.per_account}
        if self.address is not None:
            most[self.address] = throttle.per_address
        return most


def player_keys(email: str, client: str | None) -> Keys:
    """A player's log-in: under its email, and ``ip:`` and its client address (no ``@``, so it
    never meets an email's row)."""
    return Keys(email[:254], f"ip:{client}"[:254] if client else None)


def operator_keys(email: str, client: str | None) -> Keys:
    """An operator's log-in: the player's keys behind ``operator `` (a space, which no player's
    email holds), so an operator's count and a player's never meet."""
    keys = player_keys(email, client)
    address = None if keys.address is None else f"operator {keys.address}"[:254]
    return Keys(f"operator {keys.account}"[:254], address)


def begin(
    *, session: Session, keys: Keys, throttle: Throttle, now: datetime
) -> LockedOutError | None:
    """Count a log-in attempt against its account in the caller's transaction, the keys' rows
    locked; None if its password may now be checked, else the :class:`LockedOutError` to
    answer, returned (not raised) so that the caller commits what it locked out."""
    connection = session.connection()
    most = keys.limits(throttle)
    for key in sorted(most):
        connection.execute(_ENSURE_ROW.on(connection), {"key": key})
    found = {
        key: (int(failures), locked_until)
        for key, failures, locked_until in connection.execute(
            _LOCK_ROWS.where(LoginFailure.key.in_(sorted(most)))
        )
    }
    refusal: LockedOutError | None = None
    changes: dict[str, tuple[int, datetime | None]] = {}
    for key, (counted, locked_until) in found.items():
        if locked_until is not None and locked_until > now:
            refusal = refusal or _locked_out(locked_until)
            continue
        failures = 0 if locked_until is not None else counted  # a lock-out over: anew
        if failures >= most[key]:
            changes[key] = (0, now + throttle.lockout)
            refusal = refusal or _locked_out(now + throttle.lockout)
        else:
            changes[key] = (failures, None)
    if refusal is None:  # counted against its account: its password is checked next
        changes[keys.account] = (changes[keys.account][0] + 1, None)
    for key, (failures, locked_until) in changes.items():
        if (failures, locked_until) != found[key]:
            connection.execute(
                update(LoginFailure)
                .where(LoginFailure.key == key)
                .values(failures=failures, locked_until=locked_until)
            )
    return refusal


def failed(*, session: Session, keys: Keys) -> None:
    """A log-in counted by :func:`begin` failed: its address counts it too."""
    if keys.address is not None:
        session.execute(
            update(LoginFailure)
            .where(LoginFailure.key == keys.address)
            .values(failures=LoginFailure.failures + 1)
        )


def succeeded(*, session: Session, keys: Keys) -> None:
    """A log-in counted by :func:`begin` succeeded: its account's count goes back to zero. The
    row stays (zero): deleted, a log-in of the same account waiting on its lock in
    :func:`begin` would find it gone."""
    session.execute(
        update(LoginFailure)
        .where(LoginFailure.key == keys.account)
        .values(failures=0, locked_until=None)
    )


def _locked_out(until: datetime) -> LockedOutError:
    return LockedOutError(
        f"too many failed logins: try again after {until.isoformat(timespec='seconds')}"
    )
