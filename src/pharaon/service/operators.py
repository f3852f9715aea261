"""Operators as people: accounts apart from players, argon2 passwords, a TOTP second factor
(RFC 6238), sessions like players', and roles (an analyst reads, an admin also changes blocks).

Every function works in the caller's transaction; the caller commits.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import pyotp
from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import accounts, audit
from pharaon.service.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    UnauthorizedError,
)
from pharaon.service.sealing import Sealer, is_sealed
from pharaon.service.sessions import TOUCH_EVERY, NewSession, token_digest
from pharaon.store.tables import OPERATOR_ROLES, Operator, OperatorSession

ISSUER = "Pharaon back office"
# One 30 s step either side: the clocks of a phone and the server may differ a little.
_TOTP_WINDOW = 1
_TOTP_PERIOD = 30


def actor_name(email: str) -> str:
    """How an operator is named in the audit log."""
    return f"operator:{email}"


@dataclass(frozen=True, slots=True)
class NewOperator:
    """An operator just created; ``totp_secret`` and ``provisioning_uri`` are shown once."""

    operator_id: int
    email: str
    role: str
    totp_secret: str
    provisioning_uri: str


@dataclass(frozen=True, slots=True)
class CurrentOperator:
    """The operator behind a valid session (or named by the CLI's ``--as``)."""

    operator_id: int
    email: str
    role: str
    csrf_token: str = ""
    token_sha256: str = ""

    @property
    def actor(self) -> str:
        """This operator's name in the audit log."""
        return actor_name(self.email)


def _check_role(role: str) -> str:
    if role not in OPERATOR_ROLES:
        raise InvalidError(f"role must be one of {', '.join(OPERATOR_ROLES)}, got {role!r}")
    return role


def add(
    *,
    session: Session,
    email: str,
    password: str,
    role: str,
    actor: str,
    now: datetime,
    sealer: Sealer,
) -> NewOperator:
    """Create an operator with a fresh TOTP secret (stored sealed by ``sealer``); an
    ``operator_added`` audit record."""
    address = accounts.normalise_email(email)
    _check_role(role)
    if not accounts.PASSWORD_MIN <= len(password) <= accounts.PASSWORD_MAX:
        raise InvalidError(
            f"password must be {accounts.PASSWORD_MIN} to {accounts.PASSWORD_MAX} characters, "
            f"got {len(password)}"
        )
    if session.execute(select(Operator.id).where(Operator.email == address)).first():
        raise EmailTakenError(f"an operator with email {address} already exists")
    secret = pyotp.random_base32()
    operator_id = session.execute(
        insert(Operator)
        .values(
            email=address,
            password_hash=accounts._hash(password),
            totp_secret=sealer.seal(secret, email=address),
            role=role,
            created_at=now,
        )
        .returning(Operator.id)
    ).scalar_one()
    audit.append(
        session,
        kind="operator_added",
        actor=actor,
        payload={"operator_id": int(operator_id), "email": address, "role": role},
        now=now,
    )
    uri = pyotp.TOTP(secret).provisioning_uri(name=address, issuer_name=ISSUER)
    return NewOperator(int(operator_id), address, role, secret, uri)


def _accepted_step(secret: str, code: str, now: datetime, last_step: int | None) -> int | None:
    """The time step ``code`` is valid for around ``now``, unless it was already used."""
    code = code.strip()
    if not (code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(secret, interval=_TOTP_PERIOD)
    current = int(now.timestamp()) // _TOTP_PERIOD
    for step in range(current - _TOTP_WINDOW, current + _TOTP_WINDOW + 1):
        if secrets.compare_digest(totp.at(step * _TOTP_PERIOD), code):
            return step if last_step is None or step > last_step else None
    return None


def throttle_keys(email: str, client: str | None) -> list[str]:
    """The lock-out rows of an operator's log-in in ``login_failures`` (shared with players):
    its email and its client address, behind a prefix with a space, which no player's email
    holds, so an operator's count and a player's never meet."""
    keys = [f"operator {email}"[:254]]
    if client:
        keys.append(f"operator {accounts.address_key(client)}"[:254])
    return keys


def log_in(
    *,
    session: Session,
    email: str,
    password: str,
    totp_code: str,
    now: datetime,
    sealer: Sealer,
    client: str | None = None,
    max_failures: int = 5,
    lockout: timedelta = timedelta(minutes=15),
    max_address_failures: int = 20,
) -> NewSession:
    """A new operator session for the right password and a fresh TOTP code; else 401. As for
    players (:func:`pharaon.service.accounts.log_in`), ``max_failures`` wrong ones (password
    or code) for an email, or ``max_address_failures`` from the ``client`` address, lock
    log-ins out for ``lockout`` (429), even with the right ones; the caller commits the failures'
    count though the call fails.
    ``sealer`` opens the stored TOTP secret, and seals one still in clear (before 0006)."""
    refused = UnauthorizedError("wrong email, password or one-time code")
    try:
        address = accounts.normalise_email(email)
    except InvalidError:
        address = email.strip().lower()[:254]  # counted all the same, never found
    keys = throttle_keys(address, client)
    counted = list(zip(keys, (max_failures, max_address_failures), strict=False))
    accounts.check_not_locked(session, keys, now)
    row = session.execute(
        select(
            Operator.id, Operator.password_hash, Operator.totp_secret, Operator.last_totp_step
        ).where(Operator.email == address)
    ).first()
    if row is None:
        accounts._verify(accounts._DUMMY_HASH, password)  # the same time, known email or not
        accounts.count_failures(session, counted, now, lockout)
        raise refused
    if not accounts._verify(row.password_hash, password):
        accounts.count_failures(session, counted, now, lockout)
        raise refused
    secret = sealer.open(row.totp_secret, email=address)
    step = _accepted_step(secret, totp_code, now, row.last_totp_step)
    if step is None:
        accounts.count_failures(session, counted, now, lockout)
        raise refused
    accounts.clear_failures(session, keys[0])
    changes: dict[str, object] = {"last_totp_step": step}
    if not is_sealed(row.totp_secret):
        changes["totp_secret"] = sealer.seal(secret, email=address)
    session.execute(update(Operator).where(Operator.id == row.id).values(**changes))
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    session.execute(
        insert(OperatorSession).values(
            token_sha256=token_digest(token),
            operator_id=row.id,
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
        )
    )
    return NewSession(token, csrf, now)


def authenticate(
    *, session: Session, token: str, now: datetime, idle: timedelta = timedelta(minutes=30)
) -> CurrentOperator:
    """The operator behind ``token``; 401 if unknown or idle over ``idle`` (then deleted)."""
    digest = token_digest(token)
    row = session.execute(
        select(
            OperatorSession.last_seen_at,
            OperatorSession.csrf_token,
            Operator.id,
            Operator.email,
            Operator.role,
        )
        .join(Operator, Operator.id == OperatorSession.operator_id)
        .where(OperatorSession.token_sha256 == digest)
    ).first()
    if row is None:
        raise UnauthorizedError("not logged in, or the session has ended")
    if now - row.last_seen_at > idle:
        session.execute(delete(OperatorSession).where(OperatorSession.token_sha256 == digest))
        raise UnauthorizedError("the session expired after inactivity; log in again")
    if now - row.last_seen_at >= TOUCH_EVERY:  # as players' sessions: not a write per request
        session.execute(
            update(OperatorSession)
            .where(OperatorSession.token_sha256 == digest)
            .values(last_seen_at=now)
        )
    return CurrentOperator(int(row.id), row.email, row.role, row.csrf_token, digest)


def log_out(*, session: Session, token_sha256: str) -> None:
    """End an operator's session."""
    session.execute(delete(OperatorSession).where(OperatorSession.token_sha256 == token_sha256))


def by_email(*, session: Session, email: str) -> CurrentOperator:
    """The operator named ``email`` (the CLI's ``--as``); :class:`NotFoundError` if none."""
    address = accounts.normalise_email(email)
    row = session.execute(
        select(Operator.id, Operator.email, Operator.role).where(Operator.email == address)
    ).first()
    if row is None:
        raise NotFoundError(f"no operator with email {address}: see `pharaon operators add`")
    return CurrentOperator(int(row.id), row.email, row.role)


def require_admin(current: CurrentOperator) -> CurrentOperator:
    """``current`` if an admin; else :class:`ForbiddenError` (an analyst only reads)."""
    if current.role != "admin":
        raise ForbiddenError(
            f"operator {current.email} is an {current.role}: only an admin may do this"
        )
    return current
