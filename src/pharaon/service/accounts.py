"""Players: registration (adults only), argon2 password hashes, log-in with lock-out."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pharaon.service import sessions
from pharaon.service.errors import (
    EmailTakenError,
    InvalidError,
    LockedOutError,
    UnauthorizedError,
    UnderageError,
)
from pharaon.store.tables import Account, LoginFailure, Player

ADULT_AGE = 18
PASSWORD_MIN, PASSWORD_MAX = 8, 256
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+$")
# OWASP's argon2id setting (19 MiB, 2 passes): 64 MiB per log-in would crowd a worker.
_hasher = PasswordHasher(time_cost=2, memory_cost=19_456, parallelism=1)
# Hashes run on two threads of their own: a rush of log-ins costs at most two 19 MiB
# buffers, where each request thread's allocator arena would otherwise keep one.
_HASHING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="argon2")
_DUMMY_HASH = _hasher.hash("not a password anyone has")


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


def register(
    *, session: Session, email: str, password: str, birth_date: date, now: datetime
) -> Registered:
    """Open a player's account with a zero balance; adults only (403 ``underage``)."""
    address = normalise_email(email)
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise InvalidError(
            f"password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters, got {len(password)}"
        )
    today = now.date()
    if birth_date > today or birth_date.year < 1900:
        raise InvalidError(
            f"birth_date must be a past date after 1900, got {birth_date.isoformat()}"
        )
    if age_on(birth_date, today) < ADULT_AGE:
        raise UnderageError(f"players must be at least {ADULT_AGE} years old")
    taken = EmailTakenError(f"a player with email {address} already exists")
    if session.execute(select(Player.id).where(Player.email == address)).first():
        raise taken
    password_hash = _hash(password)
    try:
        # A savepoint: when a concurrent sign-up took the email first, the caller's
        # transaction survives the refused insert.
        with session.begin_nested():
            player_id = session.execute(
                insert(Player)
                .values(
                    email=address,
                    password_hash=password_hash,
                    birth_date=birth_date,
                    created_at=now,
                )
                .returning(Player.id)
            ).scalar_one()
    except IntegrityError as exc:
        if session.execute(select(Player.id).where(Player.email == address)).first():
            raise taken from exc
        raise
    session.execute(insert(Account).values(kind="player", player_id=player_id, balance_cents=0))
    return Registered(int(player_id), address)


def _hash(password: str) -> str:
    return _HASHING.submit(_hasher.hash, password).result()


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _HASHING.submit(_hasher.verify, password_hash, password).result()
    except (VerificationError, InvalidHashError):
        return False


def address_key(client: str) -> str:
    """The lock-out row of a client address: ``ip:`` and the address, which holds no ``@`` so
    it never meets an email's row (one table for both kinds of lock-out)."""
    return f"ip:{client}"[:254]


def log_in(
    *,
    session: Session,
    email: str,
    password: str,
    now: datetime,
    max_failures: int = 5,
    lockout: timedelta = timedelta(minutes=15),
    client: str | None = None,
    max_address_failures: int = 20,
) -> sessions.NewSession:
    """A new session for the right password; after ``max_failures`` wrong ones for an email,
    or ``max_address_failures`` from the ``client`` address across emails (credential
    stuffing), 429 for a while.

    Failures are counted per email, known or not, and per address, in the caller's
    transaction, which the caller commits though the call fails (:class:`UnauthorizedError`).
    A success clears its email's count, not its address's.
    """
    try:
        address = normalise_email(email)
    except InvalidError as exc:
        raise UnauthorizedError("wrong email or password") from exc
    counted = [(address, max_failures)]
    if client:
        counted.append((address_key(client), max_address_failures))
    check_not_locked(session, [key for key, _ in counted], now)
    player = session.execute(
        select(Player.id, Player.password_hash, Player.closed_at).where(Player.email == address)
    ).first()
    if player is not None and player.closed_at is not None:
        player = None  # a closed account answers as an unknown one
    if player is None or not _verify(player.password_hash, password):
        if player is None:
            _verify(_DUMMY_HASH, password)  # the same time whether the email exists or not
        count_failures(session, counted, now, lockout)
        raise UnauthorizedError("wrong email or password")
    clear_failures(session, address)
    if _hasher.check_needs_rehash(player.password_hash):
        session.execute(
            update(Player).where(Player.id == player.id).values(password_hash=_hash(password))
        )
    return sessions.create(session, player_id=int(player.id), now=now)


def check_not_locked(session: Session, keys: list[str], now: datetime) -> None:
    """:class:`LockedOutError` (429) while any of the lock-out rows ``keys`` is locked; the
    one throttle of players' and operators' log-ins (keys: an email, :func:`address_key`,
    :func:`pharaon.service.operators.throttle_keys`)."""
    locked_until = session.execute(
        select(func.max(LoginFailure.locked_until)).where(LoginFailure.email.in_(keys))
    ).scalar_one_or_none()
    if locked_until is not None and locked_until > now:
        raise LockedOutError(
            f"too many failed logins: try again after {locked_until.isoformat(timespec='seconds')}"
        )


def count_failures(
    session: Session, counted: list[tuple[str, int]], now: datetime, lockout: timedelta
) -> None:
    """Count a failed log-in on each row of ``counted`` (key, failures that lock it out for
    ``lockout``), in the caller's transaction: the caller commits it though the log-in fails."""
    for key, most in counted:
        _count_failure(session, key, now, most, lockout)


def clear_failures(session: Session, key: str) -> None:
    """A successful log-in clears the count of its account's row (not its address's)."""
    session.execute(delete(LoginFailure).where(LoginFailure.email == key))


def _count_failure(
    session: Session, email: str, now: datetime, max_failures: int, lockout: timedelta
) -> None:
    dialect = session.get_bind().dialect.name
    insert_ = postgresql.insert if dialect == "postgresql" else sqlite.insert
    table = LoginFailure.__table__
    failures = session.execute(
        insert_(LoginFailure)
        .values(email=email, failures=1, locked_until=None)
        .on_conflict_do_update(index_elements=["email"], set_={"failures": table.c.failures + 1})
        .returning(LoginFailure.failures)
    ).scalar_one()
    if failures >= max_failures:
        session.execute(
            update(LoginFailure)
            .where(LoginFailure.email == email)
            .values(failures=0, locked_until=now + lockout)
        )
