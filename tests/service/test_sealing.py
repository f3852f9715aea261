"""Operators' TOTP secrets sealed at rest (AES-GCM under a key file); on both databases."""

from __future__ import annotations

import stat
from pathlib import Path

import pyotp
import pytest
from sqlalchemy import Engine, select, update

from pharaon.service import operators, sealing
from pharaon.service.clock import utcnow
from pharaon.service.sealing import SealingError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Operator

PASSWORD = "a long admin password"


def test_the_key_file_is_made_once_owner_only(tmp_path: Path) -> None:
    first = sealing.load(tmp_path / "keys")
    path = tmp_path / "keys" / sealing.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sealing.load(tmp_path / "keys").key == first.key  # read, not made again
    sealed = first.seal("JBSWY3DPEHPK3PXP", email="a@example.org")
    assert sealed.startswith(sealing.PREFIX)
    assert "JBSWY3DPEHPK3PXP" not in sealed
    assert first.open(sealed, email="a@example.org") == "JBSWY3DPEHPK3PXP"
    with pytest.raises(SealingError, match="does not open"):
        first.open(sealed, email="b@example.org")  # copied to another operator's row
    path.chmod(0o644)
    with pytest.raises(SealingError, match="chmod 600"):
        sealing.load(tmp_path / "keys")


def test_log_in_with_a_sealed_secret_and_a_wrong_key_file(engine: Engine, tmp_path: Path) -> None:
    sealer = sealing.load(tmp_path / "right")
    now = utcnow()
    with make_sessionmaker(engine)() as session:
        created = operators.add(
            session=session,
            email="boss@example.org",
            password=PASSWORD,
            role="admin",
            actor="test",
            now=now,
            sealer=sealer,
        )
        session.commit()
        stored = session.execute(select(Operator.totp_secret)).scalar_one()
        assert created.totp_secret not in stored
        code = pyotp.TOTP(created.totp_secret).at(now)
        with pytest.raises(SealingError, match="key file"):
            operators.log_in(
                session=session,
                email="boss@example.org",
                password=PASSWORD,
                totp_code=code,
                now=now,
                sealer=sealing.load(tmp_path / "wrong"),
            )
        session.rollback()
        operators.log_in(
            session=session,
            email="boss@example.org",
            password=PASSWORD,
            totp_code=code,
            now=now,
            sealer=sealer,
        )
        session.commit()


def test_a_secret_from_before_0006_is_sealed_at_log_in(engine: Engine, tmp_path: Path) -> None:
    sealer = sealing.load(tmp_path / "keys")
    now = utcnow()
    clear = pyotp.random_base32()
    with make_sessionmaker(engine)() as session:
        operators.add(
            session=session,
            email="old@example.org",
            password=PASSWORD,
            role="admin",
            actor="test",
            now=now,
            sealer=sealer,
        )
        session.execute(update(Operator).values(totp_secret=clear))  # as migration 0005 left it
        session.commit()
        operators.log_in(
            session=session,
            email="old@example.org",
            password=PASSWORD,
            totp_code=pyotp.TOTP(clear).at(now),
            now=now,
            sealer=sealer,
        )
        session.commit()
        stored = session.execute(select(Operator.totp_secret)).scalar_one()
    assert stored.startswith(sealing.PREFIX)
    assert sealer.open(stored, email="old@example.org") == clear
