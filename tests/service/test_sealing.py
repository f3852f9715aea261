"""Operators' TOTP secrets sealed at rest (AES-GCM under a key file); on both databases."""

from __future__ import annotations

import stat
from pathlib import Path

import pyotp
import pytest
from sqlalchemy import Engine, select

from pharaon.service import logins, operators, passwords, sealing
from pharaon.service.clock import utcnow
from pharaon.service.sealing import SealingError
from pharaon.store.tables import Operator
from pharaon.store.transactions import Transactions

PASSWORD = "a long admin password"


def test_the_key_file_is_made_once_owner_only(tmp_path: Path) -> None:
    with pytest.raises(SealingError, match="no TOTP key file"):
        sealing.load(tmp_path / "keys")  # only adding an operator makes it
    first = sealing.load(tmp_path / "keys", create=True)
    path = tmp_path / "keys" / sealing.KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sealing.load(tmp_path / "keys").key == first.key  # read, not made again
    assert sealing.load(tmp_path / "keys", create=True).key == first.key
    sealed = first.seal("JBSWY3DPEHPK3PXP", email="a@example.org")
    assert sealed.startswith(sealing.PREFIX)
    assert "JBSWY3DPEHPK3PXP" not in sealed
    assert first.open(sealed, email="a@example.org") == "JBSWY3DPEHPK3PXP"
    with pytest.raises(SealingError, match="does not open"):
        first.open(sealed, email="b@example.org")  # copied to another operator's row
    with pytest.raises(SealingError, match="does not open"):
        first.open("JBSWY3DPEHPK3PXP", email="a@example.org")  # a secret left in clear
    path.chmod(0o644)
    with pytest.raises(SealingError, match="chmod 600"):
        sealing.load(tmp_path / "keys")


def test_a_sealed_secret_opens_with_its_key_file_only(
    engine: Engine, db: Transactions, tmp_path: Path
) -> None:
    sealer = sealing.load(tmp_path / "right", create=True)
    now = utcnow()
    created = db.write(
        operators.add,
        email="boss@example.org",
        password_hash=passwords.hash_password(PASSWORD),
        role="admin",
        actor="test",
        now=now,
        sealer=sealer,
    )
    with engine.connect() as connection:
        stored = connection.execute(select(Operator.totp_secret)).scalar_one()
    assert created.totp_secret not in stored
    code = pyotp.TOTP(created.totp_secret).at(now)
    attempt = db.write(
        operators.begin_log_in,
        email="boss@example.org",
        client=None,
        throttle=logins.Throttle(),
        now=now,
    )
    assert isinstance(attempt, operators.Attempt)
    wrong = sealing.load(tmp_path / "wrong", create=True)
    with pytest.raises(SealingError, match="key file"):
        operators.accepted_step(attempt, code, now=now, sealer=wrong)
    step = operators.accepted_step(attempt, code, now=now, sealer=sealer)
    assert step is not None
    db.write(operators.finish_log_in, attempt=attempt, step=step, now=now)
