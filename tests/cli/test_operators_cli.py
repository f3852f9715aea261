"""``pharaon operators add`` and ``--as EMAIL``, run as a user would, on both databases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from argon2 import extract_parameters
from click.testing import CliRunner
from sqlalchemy import Engine, select

from pharaon.cli import app
from pharaon.pool.blockfile import write_block
from pharaon.service import passwords, sealing
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, Operator
from tests.conftest import make_block

PASSWORD = "a long admin password"


@pytest.fixture(autouse=True)
def _keys_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TOTP key file in the test's directory, not the checkout's var/keys."""
    monkeypatch.setenv("PHARAON_KEYS_DIR", str(tmp_path / "keys"))


def _run(*args: str, stdin: str = "") -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), input=stdin, env={"PHARAON_ALLOW_TEST_BLOCKS": "1"}
    )
    return result.exit_code, result.stdout, result.stderr


def _add(url: str, email: str, role: str, *extra: str) -> tuple[int, str, str]:
    typed = f"{PASSWORD}\n{PASSWORD}\n"
    return _run(
        "operators", "add", email, "--role", role, *extra, "--database-url", url, stdin=typed
    )


def test_add_operators_then_act_as_one(engine: Engine, database_url: str, tmp_path: Path) -> None:
    code, out, _ = _add(database_url, "boss@example.org", "admin")
    assert code == 0, out
    secret = re.search(r"secret: ([A-Z2-7]+)", out)
    assert secret is not None
    assert "otpauth://totp/" in out
    assert PASSWORD not in out
    with make_sessionmaker(engine)() as session:
        stored = session.execute(select(Operator.totp_secret)).scalar_one()
    assert stored.startswith("aesgcm:")  # sealed, not the secret shown
    assert secret.group(1) not in stored
    sealer = sealing.load(tmp_path / "keys")
    assert sealer.open(stored, email="boss@example.org") == secret.group(1)

    # Once an operator exists, every action must say who does it.
    code, _, err = _add(database_url, "eve@example.org", "analyst")
    assert code == 2
    assert "--as" in err
    code, _, err = _add(database_url, "eve@example.org", "analyst", "--as", "ghost@example.org")
    assert code == 2
    assert "no operator" in err
    code, _, _ = _add(database_url, "eve@example.org", "analyst", "--as", "boss@example.org")
    assert code == 0
    code, _, err = _add(database_url, "x@example.org", "chief", "--as", "boss@example.org")
    assert code == 2
    assert "role must be" in err
    assert "Traceback" not in err

    path = tmp_path / "b.parquet"
    write_block(make_block(100, size=30, number=2), path)
    code, _, err = _run("blocks", "load", str(path), "--database-url", database_url)
    assert code == 2
    assert "--as" in err
    code, _, err = _run(
        "blocks", "load", str(path), "--as", "eve@example.org", "--database-url", database_url
    )
    assert code == 2
    assert "only an admin" in err
    code, out, _ = _run(
        "blocks", "load", str(path), "--as", "boss@example.org", "--database-url", database_url
    )
    assert (code, out) == (0, "loaded block 1\n")
    code, _, err = _run(
        "blocks",
        "deactivate",
        "1",
        "--reason",
        "test",
        "--as",
        "eve@example.org",
        "--database-url",
        database_url,
    )
    assert code == 2
    assert "only an admin" in err
    code, _, _ = _run(
        "blocks",
        "deactivate",
        "1",
        "--reason",
        "test",
        "--as",
        "boss@example.org",
        "--database-url",
        database_url,
    )
    assert code == 0
    with make_sessionmaker(engine)() as session:
        actors = dict(
            session.execute(
                select(AuditRecord.kind, AuditRecord.actor).where(
                    AuditRecord.kind.in_(["block_loaded", "block_deactivated"])
                )
            ).all()
        )
        kinds = [k for (k,) in session.execute(select(AuditRecord.kind)).all()]
    assert "operator_added" in kinds
    assert set(actors.values()) == {"operator:boss@example.org"}, actors


@pytest.mark.parametrize(
    ("hashing", "memory_kib"), [("production", 19_456), ("fast-insecure-for-tests", 8)]
)
def test_add_hashes_with_the_parameters_the_environment_names(
    engine: Engine,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    hashing: str,
    memory_kib: int,
) -> None:
    monkeypatch.setenv("PHARAON_PASSWORD_HASHING", hashing)
    found = passwords.in_force()
    try:
        code, out, _ = _add(database_url, "boss@example.org", "admin")
    finally:
        passwords.use(found)
    assert code == 0, out
    with make_sessionmaker(engine)() as session:
        stored = session.execute(select(Operator.password_hash)).scalar_one()
    assert extract_parameters(stored).memory_cost == memory_kib
