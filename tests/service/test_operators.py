"""Operators: argon2 passwords, TOTP (RFC 6238) log-in, sessions and roles, on both databases."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyotp
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from pharaon.service import operators, sealing
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidError,
    LockedOutError,
    NotFoundError,
    UnauthorizedError,
)
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, LoginFailure, Operator, OperatorSession

PASSWORD = "a long admin password"
# A fixed key: these tests check the log-in, tests/service/test_sealing.py the key file.
SEALER = sealing.Sealer(bytes(range(32)), Path("test-totp.key"))


def _add(session: Session, email: str, role: str, now: datetime) -> operators.NewOperator:
    created = operators.add(
        sealer=SEALER,
        session=session,
        email=email,
        password=PASSWORD,
        role=role,
        actor="test",
        now=now,
    )
    session.commit()
    return created


def _code(secret: str, at: datetime) -> str:
    return pyotp.TOTP(secret).at(at)


def test_add_stores_a_hash_and_the_secret_and_audits(engine: Engine) -> None:
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        created = _add(session, " Admin@Example.org", "admin", now)
        assert created.email == "admin@example.org"
        assert created.provisioning_uri.startswith("otpauth://totp/")
        assert created.totp_secret in created.provisioning_uri
        row = session.execute(select(Operator)).scalar_one()
        assert row.password_hash.startswith("$argon2id$")
        assert PASSWORD not in row.password_hash
        # Sealed: the column holds no base32 secret, and opens to the one shown.
        assert row.totp_secret.startswith(sealing.PREFIX)
        assert created.totp_secret not in row.totp_secret
        assert SEALER.open(row.totp_secret, email=row.email) == created.totp_secret
        record = session.execute(
            select(AuditRecord).where(AuditRecord.kind == "operator_added")
        ).scalar_one()
        assert record.actor == "test"
        assert PASSWORD not in record.payload
        assert created.totp_secret not in record.payload
        with pytest.raises(EmailTakenError):
            _add(session, "admin@example.org", "analyst", now)
        session.rollback()
        with pytest.raises(InvalidError):
            _add(session, "other@example.org", "owner", now)
        with pytest.raises(InvalidError):
            operators.add(
                sealer=SEALER,
                session=session,
                email="short@example.org",
                password="short",
                role="admin",
                actor="test",
                now=now,
            )


def test_log_in_needs_password_and_a_fresh_totp_code(engine: Engine) -> None:
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        created = _add(session, "admin@example.org", "admin", now)
        good = _code(created.totp_secret, now)
        for email, password, code in [
            ("admin@example.org", "wrong password!", good),
            ("nobody@example.org", PASSWORD, good),
            ("admin@example.org", PASSWORD, "000000" if good != "000000" else "111111"),
            ("admin@example.org", PASSWORD, _code(created.totp_secret, now - timedelta(minutes=5))),
            ("admin@example.org", PASSWORD, "12ab56"),
        ]:
            with pytest.raises(UnauthorizedError):
                operators.log_in(
                    sealer=SEALER,
                    session=session,
                    email=email,
                    password=password,
                    totp_code=code,
                    now=now,
                )
            session.rollback()
        new = operators.log_in(
            sealer=SEALER,
            session=session,
            email="admin@example.org",
            password=PASSWORD,
            totp_code=good,
            now=now,
        )
        session.commit()
        # The same code cannot be used twice (replay).
        with pytest.raises(UnauthorizedError):
            operators.log_in(
                sealer=SEALER,
                session=session,
                email="admin@example.org",
                password=PASSWORD,
                totp_code=good,
                now=now,
            )
        session.rollback()
        stored = session.execute(select(OperatorSession.token_sha256)).scalar_one()
        assert stored != new.token
        assert len(stored) == 64
        current = operators.authenticate(session=session, token=new.token, now=now)
        session.commit()
        assert (current.email, current.role, current.actor) == (
            "admin@example.org",
            "admin",
            "operator:admin@example.org",
        )
        assert operators.require_admin(current) is current
        # Its last request is written at most every 30 s, as players' are: the idle clock
        # runs from the last write.
        last_seen = select(OperatorSession.last_seen_at)
        operators.authenticate(session=session, token=new.token, now=now + timedelta(seconds=20))
        assert session.execute(last_seen).scalar_one() == now
        later = now + timedelta(seconds=31)
        operators.authenticate(session=session, token=new.token, now=later)
        assert session.execute(last_seen).scalar_one() == later
        session.commit()
        with pytest.raises(UnauthorizedError):
            operators.authenticate(session=session, token="not a token", now=now)
        with pytest.raises(UnauthorizedError):
            operators.authenticate(session=session, token=new.token, now=later + timedelta(hours=1))
        session.commit()
        with pytest.raises(UnauthorizedError):
            operators.authenticate(session=session, token=new.token, now=now)


def test_an_analyst_may_not_act(engine: Engine) -> None:
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        _add(session, "analyst@example.org", "analyst", now)
        current = operators.by_email(session=session, email="analyst@example.org")
        assert current.role == "analyst"
        with pytest.raises(ForbiddenError):
            operators.require_admin(current)
        with pytest.raises(NotFoundError):
            operators.by_email(session=session, email="ghost@example.org")


def test_wrong_codes_lock_the_operator_out(engine: Engine) -> None:
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        created = _add(session, "locked@example.org", "admin", now)
        good = _code(created.totp_secret, now)
        wrong = "000000" if good != "000000" else "111111"
        for _ in range(3):  # wrong codes with the right password count as failures
            with pytest.raises(UnauthorizedError):
                operators.log_in(
                    sealer=SEALER,
                    session=session,
                    email="locked@example.org",
                    password=PASSWORD,
                    totp_code=wrong,
                    now=now,
                    max_failures=3,
                )
            session.commit()  # as the route does: the failure's count stays
        with pytest.raises(LockedOutError):
            operators.log_in(
                sealer=SEALER,
                session=session,
                email="locked@example.org",
                password=PASSWORD,
                totp_code=good,
                now=now,
                max_failures=3,
            )
        session.rollback()
        # The lock-out ends; a success then clears the count.
        later = now + timedelta(minutes=16)
        operators.log_in(
            sealer=SEALER,
            session=session,
            email="locked@example.org",
            password=PASSWORD,
            totp_code=_code(created.totp_secret, later),
            now=later,
            max_failures=3,
        )
        session.commit()
        # A player with the same email keeps a count of its own.
        keys = session.execute(select(LoginFailure.email)).scalars().all()
        assert "locked@example.org" not in keys
