"""Players' accounts: sign-up (adults only) and log-in, with the lock-out of
:mod:`pharaon.service.logins`.

The slow part of both, the password's hash (:mod:`pharaon.service.passwords`), is done by the
caller between the transactions, never in one: sign-up is :func:`check_sign_up`, the hash, then
:func:`register`; log-in is :func:`begin_log_in`, the check of the password against the hash it
returns, then :func:`finish_log_in`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import logins, measures, passwords, sessions, traces
from pharaon.service.errors import (
    EmailTakenError,
    InvalidError,
    LockedOutError,
    UnauthorizedError,
    UnderageError,
)
from pharaon.store.dialect import PerDialect
from pharaon.store.tables import Account, Player

ADULT_AGE = 18
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+$")
WRONG = "wrong email or password"

_INSERT_PLAYER = PerDialect(
    lambda sql: (
        sql.insert(Player).on_conflict_do_nothing(index_elements=["email"]).returning(Player.id)
    )
)


def normalise_email(email: str) -> str:
    """``email`` trimmed and lower-cased; :class:`InvalidError` if it does not look like one."""
    value = email.strip().lower()
    if len(value) > 254 or not _EMAIL.match(value):
        raise InvalidError(f"email must look like name@example.org, got {email!r}")
    return value


def age_on(birth_date: date, day: date) -> int:
    """Completed years of life on ``day``."""
    before_birthday = (day.month, day.day) < (birth_date.month, birth_date.day)
    return day.year - birth_date.year - before_birthday


@dataclass(frozen=True, slots=True)
class Registered:
    player_id: int
    email: str


def check_sign_up(*, email: str, password: str, birth_date: date, now: datetime) -> str:
    """The normalised email of a sign-up whose fields are acceptable; else
    :class:`InvalidError`, or :class:`UnderageError` (403) under 18."""
    address = normalise_email(email)
    passwords.check_length(password)
    today = now.date()
    if birth_date > today or birth_date.year < 1900:
        raise InvalidError(
            f"birth_date must be a past date after 1900, got {birth_date.isoformat()}"
        )
    if age_on(birth_date, today) < ADULT_AGE:
        raise UnderageError(f"players must be at least {ADULT_AGE} years old")
    return address


def register(
    *,
    session: Session,
    email: str,
    password_hash: str,
    birth_date: date,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> Registered:
    """Open the account of a sign-up checked by :func:`check_sign_up` (``email`` normalised,
    the password already hashed) with a zero balance, traced as seen from ``seen``;
    :class:`EmailTakenError` if the email is already a player's, however many sign up with it
    at once."""
    connection = session.connection()
    player_id = connection.execute(
        _INSERT_PLAYER.on(connection),
        {
            "email": email,
            "password_hash": password_hash,
            "birth_date": birth_date,
            "created_at": now,
        },
    ).scalar_one_or_none()
    if player_id is None:
        raise EmailTakenError(f"a player with email {email} already exists")
    session.execute(insert(Account).values(kind="player", player_id=player_id, balance_cents=0))
    traces.record(session, kind="account_opened", player_id=player_id, seen=seen, now=now)
    return Registered(int(player_id), email)


@dataclass(frozen=True, slots=True)
class Attempt:
    """A log-in counted by the lock-out, to be checked against ``password_hash`` (None: no
    account has that email, and the check fails in the same time)."""

    keys: logins.Keys
    player_id: int | None
    password_hash: str | None
    closed_at: datetime | None = None  # a closed account: the right password is told so
    client: str | None = None  # the client's address, for the trace


def login_email(email: str) -> str:
    """The email a log-in is counted under; :class:`UnauthorizedError` for one that cannot be
    any player's (no count: it names no account)."""
    try:
        return normalise_email(email)
    except InvalidError as exc:
        raise UnauthorizedError(WRONG) from exc


def begin_log_in(
    *,
    session: Session,
    email: str,
    client: str | None,
    throttle: logins.Throttle,
    now: datetime,
) -> Attempt | LockedOutError:
    """Count a log-in with ``email`` (from :func:`login_email`) from ``client`` against the
    lock-out and read what its password is checked against; or the refusal when it is locked
    out (returned: the caller commits the lock-out)."""
    keys = logins.player_keys(email, client)
    refused = logins.begin(session=session, keys=keys, throttle=throttle, now=now)
    if refused is not None:
        return refused
    row = session.execute(
        select(Player.id, Player.password_hash, Player.closed_at).where(Player.email == email)
    ).first()
    if row is None:  # unknown: answered as a wrong password
        return Attempt(keys, None, None, client=client)
    return Attempt(keys, int(row.id), row.password_hash, row.closed_at, client)


def finish_log_in(
    *, session: Session, attempt: Attempt, now: datetime, new_hash: str | None = None
) -> sessions.NewSession:
    """A new session for an attempt whose password was right (its count given back); the
    password's hash replaced by ``new_hash`` if the caller made one (older settings)."""
    if attempt.player_id is None:
        raise UnauthorizedError(WRONG)
    if attempt.closed_at is not None:
        raise measures.closed_refusal(session.connection(), attempt.player_id, attempt.closed_at)
    logins.succeeded(session=session, keys=attempt.keys)
    if new_hash is not None:
        session.execute(
            update(Player).where(Player.id == attempt.player_id).values(password_hash=new_hash)
        )
    created = sessions.create(session, player_id=attempt.player_id, now=now)
    seen = traces.Seen(traces.session_id(sessions.token_digest(created.token)), attempt.client)
    traces.record(session, kind="login", player_id=attempt.player_id, seen=seen, now=now)
    return created


def log_in_failed(*, session: Session, attempt: Attempt, now: datetime) -> None:
    """A log-in whose password was wrong: counted against its address too, and traced."""
    logins.failed(session=session, keys=attempt.keys)
    seen = traces.Seen(address=attempt.client)
    traces.record(session, kind="login_failed", player_id=attempt.player_id, seen=seen, now=now)


def log_out(
    *, session: Session, player_id: int, token_sha256: str, seen: traces.Seen, now: datetime
) -> None:
    """End the session ``token_sha256`` of ``player_id``, traced."""
    sessions.end(session=session, token_sha256=token_sha256)
    traces.record(session, kind="logout", player_id=player_id, seen=seen, now=now)


def password_hash(*, connection: Connection, player_id: int) -> str:
    """The player's password hash (to check a password asked again: a change, a closure)."""
    return str(
        connection.execute(select(Player.password_hash).where(Player.id == player_id)).scalar_one()
    )
