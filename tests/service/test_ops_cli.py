"""The operator commands, run as a user would (click's runner), on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from pharaon.cli import app
from pharaon.pool.blockfile import write_block
from tests.conftest import make_block


def _run(*args: str, allow_test: bool = True) -> tuple[int, str, str]:
    env = {"PHARAON_ALLOW_TEST_BLOCKS": "1" if allow_test else "0"}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_upgrade_load_list_deactivate_audit(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    write_block(make_block(100, size=30, number=4), path)
    code, _, err = _run("blocks", "list", "--database-url", database_url)
    assert code == 2
    assert "pharaon db upgrade" in err
    assert _run("db", "upgrade", "--create", "--database-url", database_url)[0] == 0
    code, _, err = _run(
        "blocks", "load", str(path), "--database-url", database_url, allow_test=False
    )
    assert code == 2
    assert "test block" in err
    code, out, _ = _run("blocks", "load", str(path), "--database-url", database_url)
    assert (code, out) == (0, "loaded block 1\n")
    code, _, err = _run("blocks", "load", str(path), "--database-url", database_url)
    assert code == 2
    assert "already loaded" in err
    code, out, _ = _run("blocks", "list", "--database-url", database_url)
    assert code == 0
    assert "E1/4 (test)" in out
    assert "loaded, awaiting approval" in out
    assert "0/30" in out
    code, out, _ = _run(
        "blocks", "deactivate", "1", "--reason", "test run", "--database-url", database_url
    )
    assert (code, out) == (0, "block 1 deactivated\n")
    code, _, err = _run(
        "blocks", "deactivate", "7", "--reason", "x", "--database-url", database_url
    )
    assert code == 2
    assert err == "pharaon: error: no block with id 7\n"
    code, out, _ = _run("audit", "--database-url", database_url)
    assert code == 0
    assert "FAIL" not in out
    assert "audit chain intact: 2 records" in out


def test_audit_fails_loudly(engine: Engine, database_url: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE accounts SET balance_cents = 5 WHERE id = 1"))
    code, out, err = _run("audit", "--database-url", database_url)
    assert code == 1
    assert "FAIL  balances equal ledgers" in out
    assert err.startswith("pharaon: error: audit failed: balances equal ledgers: account 1")


@pytest.mark.parametrize("url", ["mysql://u@h/d", "sqlite://"])
def test_bad_database_url(url: str) -> None:
    code, _, err = _run("db", "upgrade", "--database-url", url)
    assert code == 2
    assert err.startswith("pharaon: error: ")
    assert err.count("\n") == 1


def test_unreachable_postgresql() -> None:
    code, _, err = _run("db", "upgrade", "--database-url", "postgresql://nobody@127.0.0.1:1/x")
    assert code == 2
    assert err.startswith("pharaon: error: database error:")
    assert err.count("\n") == 1
