"""Operators: argon2 passwords, TOTP (RFC 6238) log-in, sessions and roles, on both databases.

A log-in is three steps, as the route takes them (web/routers/operator_api.py): counted and read
(:func:`operators.begin_log_in`), the password and the code checked between transactions, then
the session opened (:func:`operators.finish_log_in`) or the failure counted."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyotp
import pytest
from sqlalchemy import select

from pharaon.service import logins, operators, passwords, sealing, sessions
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidError,
    LockedOutError,
    NotFoundError,
    ServiceError,
    UnauthorizedError,
)
from pharaon.store.tables import AuditRecord, LoginFailure, Operator, SessionRow
from pharaon.store.transactions import Transactions

PASSWORD = "a long admin password"
# A fixed key: these tests check the log-in, tests/service/test_sealing.py the key file.
SEALER = sealing.Sealer(bytes(range(32)), Path("test-totp.key"))
THROTTLE = logins.Throttle(per_account=3, per_address=20, lockout=timedelta(minutes=15))


def _add(db: Transactions, email: str, role: str, now: datetime) -> operators.NewOperator:
    address = operators.check_new(email=email, password=PASSWORD, role=role)
    return db.write(
        operators.add,
        sealer=SEALER,
        email=address,
        password_hash=passwords.hash_password(PASSWORD),
        role=role,
        actor="test",
        now=now,
    )


def _log_in(
    db: Transactions,
    email: str,
    password: str,
    code: str,
    now: datetime,
    *,
    throttle: logins.Throttle = THROTTLE,
) -> sessions.NewSession:
    """The route's steps (web/routers/operator_api.py), without HTTP."""
    attempt = db.write(
        operators.begin_log_in,
        email=operators.login_email(email),
        client="192.0.2.1",
        throttle=throttle,
        now=now,
    )
    if isinstance(attempt, ServiceError):
        raise attempt
    step = None
    if passwords.verify_password(attempt.password_hash, password):
        step = operators.accepted_step(attempt, code, now=now, sealer=SEALER)
    if step is None:
        db.write(logins.failed, keys=attempt.keys)
        raise UnauthorizedError(operators.WRONG)
    return db.write(operators.finish_log_in, attempt=attempt, step=step, now=now)


def _code(secret: str, at: datetime) -> str:
    return pyotp.TOTP(secret).at(at)


def test_add_stores_a_hash_and_the_secret_and_audits(db: Transactions) -> None:
    now = utcnow()
    created = _add(db, " Admin@Example.org", "admin", now)
    assert created.email == "admin@example.org"
    assert created.provisioning_uri.startswith("otpauth://totp/")
    assert created.totp_secret in created.provisioning_uri
    with db.engine.connect() as connection:
        row = connection.execute(select(Operator)).one()
        record = connection.execute(
            select(AuditRecord).where(AuditRecord.kind == "operator_added")
        ).one()
    assert row.password_hash.startswith("$argon2id$")
    assert PASSWORD not in row.password_hash
    # Sealed: the column holds no base32 secret, and opens to the one shown.
    assert row.totp_secret.startswith(sealing.PREFIX)
    assert created.totp_secret not in row.totp_secret
    assert SEALER.open(row.totp_secret, email=row.email) == created.totp_secret
    assert record.actor == "test"
    assert PASSWORD not in record.payload
    assert created.totp_secret not in record.payload
    with pytest.raises(EmailTakenError):
        _add(db, "admin@example.org", "analyst", now)
    with pytest.raises(InvalidError):
        _add(db, "other@example.org", "owner", now)
    with pytest.raises(InvalidError):
        operators.check_new(email="short@example.org", password="short", role="admin")


def test_log_in_needs_password_and_a_fresh_totp_code(db: Transactions) -> None:
    now = utcnow()
    created = _add(db, "admin@example.org", "admin", now)
    good = _code(created.totp_secret, now)
    wrong = "000000" if good != "000000" else "111111"
    generous = logins.Throttle(per_account=10)  # the failures below are not to lock it out
    for email, password, code in [
        ("admin@example.org", "wrong password!", good),
        ("nobody@example.org", PASSWORD, good),
        ("admin@example.org", PASSWORD, wrong),
        ("admin@example.org", PASSWORD, _code(created.totp_secret, now - timedelta(minutes=5))),
        ("admin@example.org", PASSWORD, "12ab56"),
    ]:
        with pytest.raises(UnauthorizedError):
            _log_in(db, email, password, code, now, throttle=generous)
    new = _log_in(db, "admin@example.org", PASSWORD, good, now, throttle=generous)
    # The same code cannot be used twice (replay).
    with pytest.raises(UnauthorizedError):
        _log_in(db, "admin@example.org", PASSWORD, good, now, throttle=generous)
    with db.engine.connect() as connection:
        stored = connection.execute(select(SessionRow.token_sha256, SessionRow.operator_id)).one()
    assert stored.token_sha256 != new.token
    assert len(stored.token_sha256) == 64
    assert stored.operator_id == created.operator_id
    [found] = db.read(sessions.look_up, requests=[new.token], now=now)
    assert isinstance(found, sessions.Found)
    assert sessions.due(found, now=now, idle=timedelta(minutes=30)) is None
    current = found.holder
    assert isinstance(current, sessions.OperatorSession)
    assert (current.email, current.role, current.actor) == (
        "admin@example.org",
        "admin",
        "operator:admin@example.org",
    )
    assert operators.require_admin(current) is current


def test_one_code_opens_one_session(db: Transactions) -> None:
    """Two log-ins that checked the same code: the step is taken in the database, once."""
    now = utcnow()
    created = _add(db, "twice@example.org", "admin", now)
    good = _code(created.totp_secret, now)
    attempts = [
        db.write(
            operators.begin_log_in,
            email="twice@example.org",
            client=None,
            throttle=THROTTLE,
            now=now,
        )
        for _ in range(2)
    ]
    steps = []
    for attempt in attempts:
        assert isinstance(attempt, operators.Attempt)
        steps.append(operators.accepted_step(attempt, good, now=now, sealer=SEALER))
    assert steps[0] == steps[1] is not None
    first, second = attempts
    assert isinstance(first, operators.Attempt)
    assert isinstance(second, operators.Attempt)
    db.write(operators.finish_log_in, attempt=first, step=steps[0], now=now)
    with pytest.raises(UnauthorizedError):
        db.write(operators.finish_log_in, attempt=second, step=steps[1], now=now)


def test_an_analyst_may_not_act(db: Transactions) -> None:
    now = utcnow()
    _add(db, "analyst@example.org", "analyst", now)
    current = db.read(operators.by_email, email="analyst@example.org")
    assert current.role == "analyst"
    with pytest.raises(ForbiddenError):
        operators.require_admin(current)
    with pytest.raises(NotFoundError):
        db.read(operators.by_email, email="ghost@example.org")


def test_wrong_codes_lock_the_operator_out(db: Transactions) -> None:
    now = utcnow()
    created = _add(db, "locked@example.org", "admin", now)
    good = _code(created.totp_secret, now)
    wrong = "000000" if good != "000000" else "111111"
    for _ in range(3):  # wrong codes with the right password count as failures
        with pytest.raises(UnauthorizedError):
            _log_in(db, "locked@example.org", PASSWORD, wrong, now)
    with pytest.raises(LockedOutError):
        _log_in(db, "locked@example.org", PASSWORD, good, now)
    # The lock-out ends; a success then clears the count.
    later = now + timedelta(minutes=16)
    _log_in(db, "locked@example.org", PASSWORD, _code(created.totp_secret, later), later)
    with db.engine.connect() as connection:
        counts = dict(connection.execute(select(LoginFailure.key, LoginFailure.failures)).all())
    # A player with the same email keeps a count of its own; the operator's is back to zero.
    assert "locked@example.org" not in counts
    assert counts["operator locked@example.org"] == 0
