"""Operators as people: accounts apart from players, argon2 passwords, a TOTP second factor
(RFC 6238), sessions like players' (:mod:`pharaon.service.sessions`), and roles (an analyst
reads, an admin also changes blocks, an auditor reads and approves loaded blocks for sale).

Every function works in the caller's transaction. As for players, the password's hash is made
and checked by the caller between transactions: log-in is :func:`begin_log_in`, the check of
the password and of the code (:func:`accepted_step`), then :func:`finish_log_in`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

import pyotp
from sqlalchemy import Connection, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import accounts, audit, logins, passwords, sessions
from pharaon.service.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidError,
    LockedOutError,
    NotFoundError,
    UnauthorizedError,
)
from pharaon.service.sealing import Sealer, SealingError
from pharaon.store.tables import OPERATOR_ROLES, Operator

ISSUER = "Pharaon back office"
WRONG = "wrong email, password or one-time code"
# One 30 s step either side: the clocks of a phone and the server may differ a little.
_TOTP_WINDOW = 1
_TOTP_PERIOD = 30


@dataclass(frozen=True, slots=True)
class NewOperator:
    """An operator just created; ``totp_secret`` and ``provisioning_uri`` are shown once."""

    operator_id: int
    email: str
    role: str
    totp_secret: str
    provisioning_uri: str


@dataclass(frozen=True, slots=True)
class Acting:
    """An operator named by the command line's ``--as``."""

    operator_id: int
    email: str
    role: str

    @property
    def actor(self) -> str:
        """This operator's name in the audit log."""
        return audit.operator_actor(self.email)


class _Role(Protocol):
    @property
    def email(self) -> str: ...
    @property
    def role(self) -> str: ...


Someone = TypeVar("Someone", bound=_Role)


def check_new(*, email: str, password: str, role: str) -> str:
    """The normalised email of an operator to add, once the fields are acceptable."""
    address = accounts.normalise_email(email)
    if role not in OPERATOR_ROLES:
        raise InvalidError(f"role must be one of {', '.join(OPERATOR_ROLES)}, got {role!r}")
    passwords.check_length(password)
    return address


def add(
    *,
    session: Session,
    email: str,
    password_hash: str,
    role: str,
    actor: str,
    now: datetime,
    sealer: Sealer,
) -> NewOperator:
    """Create an operator checked by :func:`check_new` with a fresh TOTP secret (stored sealed
    by ``sealer``); an ``operator_added`` audit record."""
    if session.execute(select(Operator.id).where(Operator.email == email)).first():
        raise EmailTakenError(f"an operator with email {email} already exists")
    secret = pyotp.random_base32()
    operator_id = session.execute(
        insert(Operator)
        .values(
            email=email,
            password_hash=password_hash,
            totp_secret=sealer.seal(secret, email=email),
            role=role,
            created_at=now,
        )
        .returning(Operator.id)
    ).scalar_one()
    audit.append(
        session,
        kind="operator_added",
        actor=actor,
        payload={"operator_id": int(operator_id), "email": email, "role": role},
        now=now,
    )
    uri = pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)
    return NewOperator(int(operator_id), email, role, secret, uri)


@dataclass(frozen=True, slots=True)
class Attempt:
    """An operator's log-in counted by the lock-out; the operator's row as it was read (no
    operator: ``operator_id`` None, and the checks fail in the same time)."""

    keys: logins.Keys
    email: str
    operator_id: int | None
    password_hash: str | None
    sealed_secret: str | None
    last_step: int | None


def login_email(email: str) -> str:
    """The email an operator's log-in is counted under (a malformed one too: counted, never
    found)."""
    try:
        return accounts.normalise_email(email)
    except InvalidError:
        return email.strip().lower()[:254]


def begin_log_in(
    *,
    session: Session,
    email: str,
    client: str | None,
    throttle: logins.Throttle,
    now: datetime,
) -> Attempt | LockedOutError:
    """Count a log-in of operator ``email`` (from :func:`login_email`) against the lock-out
    and read what it is checked against; or the refusal when locked out (returned: the caller
    commits the lock-out)."""
    keys = logins.operator_keys(email, client)
    refused = logins.begin(session=session, keys=keys, throttle=throttle, now=now)
    if refused is not None:
        return refused
    row = session.execute(
        select(
            Operator.id, Operator.password_hash, Operator.totp_secret, Operator.last_totp_step
        ).where(Operator.email == email)
    ).first()
    if row is None:
        return Attempt(keys, email, None, None, None, None)
    return Attempt(keys, email, int(row.id), row.password_hash, row.totp_secret, row.last_totp_step)


def accepted_step(attempt: Attempt, code: str, *, now: datetime, sealer: Sealer) -> int | None:
    """The TOTP time step ``code`` is valid for around ``now``, unless it was used already
    (a step not after the last accepted); None if the code is not right."""
    if attempt.sealed_secret is None:
        return None
    code = code.strip()
    if not (code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(
        sealer.open(attempt.sealed_secret, email=attempt.email), interval=_TOTP_PERIOD
    )
    current = int(now.timestamp()) // _TOTP_PERIOD
    for step in range(current - _TOTP_WINDOW, current + _TOTP_WINDOW + 1):
        if secrets.compare_digest(totp.at(step * _TOTP_PERIOD), code):
            return step if attempt.last_step is None or step > attempt.last_step else None
    return None


def finish_log_in(
    *, session: Session, attempt: Attempt, step: int, now: datetime
) -> sessions.NewSession:
    """A new session for an attempt whose password and code (valid for ``step``) were right.
    The step is taken in the database, after the last one accepted: of concurrent log-ins with
    one code, one gets a session and the others :class:`UnauthorizedError`."""
    taken = session.execute(
        update(Operator)
        .where(
            Operator.id == attempt.operator_id,
            (Operator.last_totp_step.is_(None)) | (Operator.last_totp_step < step),
        )
        .values(last_totp_step=step)
        .returning(Operator.id)
    ).first()
    if taken is None or attempt.operator_id is None:
        raise UnauthorizedError(WRONG)
    logins.succeeded(session=session, keys=attempt.keys)
    return sessions.create(session, operator_id=attempt.operator_id, now=now)


def by_email(*, connection: Connection, email: str) -> Acting:
    """The operator named ``email`` (the command line's ``--as``); :class:`NotFoundError` if
    none."""
    address = accounts.normalise_email(email)
    row = connection.execute(
        select(Operator.id, Operator.email, Operator.role).where(Operator.email == address)
    ).first()
    if row is None:
        raise NotFoundError(f"no operator with email {address}: see `pharaon operators add`")
    return Acting(int(row.id), row.email, row.role)


def any_operator(*, connection: Connection) -> bool:
    """Whether any operator was added (then the command line needs ``--as``)."""
    return connection.execute(select(Operator.id).limit(1)).first() is not None


def require_admin(current: Someone) -> Someone:
    """``current`` if an admin; else :class:`ForbiddenError` (an analyst only reads)."""
    if current.role != "admin":
        raise ForbiddenError(
            f"operator {current.email} is an {current.role}: only an admin may do this"
        )
    return current


def require_auditor(current: Someone) -> Someone:
    """``current`` if an auditor; else :class:`ForbiddenError` (only an auditor approves a
    block for sale)."""
    if current.role != "auditor":
        raise ForbiddenError(
            f"operator {current.email} is an {current.role}: only an auditor may do this"
        )
    return current


def check_sealer(*, connection: Connection, sealer: Sealer | None) -> None:
    """Raise the :class:`SealingError` an operator's log-in would meet: the operators' TOTP
    secrets must open with the key file (``sealer``; None when it could not be loaded, which
    matters only once there are operators). A server checks it at start, so a wrong or missing
    key folder stops it with one line rather than failing every log-in."""
    first = connection.execute(
        select(Operator.email, Operator.totp_secret).order_by(Operator.id).limit(1)
    ).first()
    if first is None:
        return
    if sealer is None:
        raise SealingError(
            "operators are registered but their TOTP key file cannot be read: "
            "is PHARAON_KEYS_DIR the folder they were added with?"
        )
    sealer.open(first.totp_secret, email=first.email)
