"""``pharaon banned load`` and ``pharaon banned check``, run as a user would, on both
databases: exit 0 and a summary, or exit 1 (a refused file) or 2 (usage) and one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select

from pharaon.cli import app
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, BannedGambler, Player
from pharaon.store.transactions import Transactions
from tests.service.test_banned import LIST, _verified
from tests.service.test_measures import _operator


@pytest.fixture(autouse=True)
def _keys_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHARAON_KEYS_DIR", str(tmp_path / "keys"))


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _names(engine: Engine) -> list[str]:
    with make_sessionmaker(engine)() as session:
        return sorted(session.execute(select(BannedGambler.last_name)).scalars())


def test_load_then_check(
    engine: Engine, db: Transactions, database_url: str, tmp_path: Path
) -> None:
    admin = _operator(db)  # admin@example.org
    ana = _verified(db, engine, admin, "ana", "Anne Marie")
    listed = tmp_path / "interdits.csv"
    listed.write_bytes(LIST)
    url = ("--database-url", database_url)
    code, _, err = _run("banned", "load", str(listed), *url)
    assert (code, err.count("\n")) == (2, 1)
    assert "--as" in err
    code, out, err = _run("banned", "load", str(listed), "--as", "admin@example.org", *url)
    assert (code, err) == (0, "")
    assert out.startswith("banned-gamblers list loaded: 3 people (3 lines)\n")
    assert re.search(r"sha256: [0-9a-f]{64}", out)
    assert _names(engine) == ["dartagnan", "dupont", "lefevre"]

    code, out, err = _run("banned", "check", "--as", "admin@example.org", *url)
    assert (code, err) == (0, "")
    assert out == f"players newly found on the banned-gamblers list and suspended: {ana}\n"
    code, out, _ = _run("banned", "check", "--as", "admin@example.org", *url)
    assert (code, out) == (
        0,
        "players newly found on the banned-gamblers list and suspended: none\n",
    )
    with make_sessionmaker(engine)() as session:
        suspended = session.execute(
            select(Player.suspended_at).where(Player.id == ana)
        ).scalar_one()
        kinds = session.execute(
            select(AuditRecord.kind, AuditRecord.actor)
            .where(AuditRecord.kind.in_(["banned_list_loaded", "player_banned"]))
            .order_by(AuditRecord.seq)
        ).all()
    assert suspended is not None
    assert [tuple(k) for k in kinds] == [
        ("banned_list_loaded", "operator:admin@example.org"),
        ("player_banned", "operator:admin@example.org"),
    ]


@pytest.mark.parametrize(
    "case",
    [
        (b"nom,prenom,date\n", "line 1: the header must be last_name,first_names,birth_date"),
        (LIST + b"Martin,,1990-01-01\n", "line 6: first_names is empty"),
        (LIST + b"Martin,Paul,17/05/1990\n", "line 6: birth_date must be a date YYYY-MM-DD"),
    ],
)
def test_a_malformed_file_is_refused_in_one_line(
    engine: Engine, db: Transactions, database_url: str, tmp_path: Path, case: tuple[bytes, str]
) -> None:
    content, said = case
    _operator(db)
    url = ("--database-url", database_url)
    good = tmp_path / "good.csv"
    good.write_bytes(LIST)
    assert _run("banned", "load", str(good), "--as", "admin@example.org", *url)[0] == 0
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content)
    code, out, err = _run("banned", "load", str(bad), "--as", "admin@example.org", *url)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith("pharaon: error: ")
    assert said in err
    assert "Traceback" not in err
    assert _names(engine) == ["dartagnan", "dupont", "lefevre"]  # the list in force stays


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    code, _, err = _run("banned", "load", str(tmp_path / "nothing.csv"))
    assert code == 1
    assert err.count("\n") == 1
    assert "cannot read" in err
