"""``pharaon blocks approve``, run as a user would, on both databases: only an auditor, the
server's verification of the stored units, the auditor's own copy of the file checked with
``--file``; a refusal is one line, a non-zero exit, and changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select, update

from pharaon.cli import app
from pharaon.pool.blockfile import write_block
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, Block, UnitRow
from tests.conftest import make_block

PASSWORD = "a long operator password"


@pytest.fixture(autouse=True)
def _keys_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TOTP key file in the test's directory, not the checkout's var/keys."""
    monkeypatch.setenv("PHARAON_KEYS_DIR", str(tmp_path / "keys"))


def _run(url: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, [*args, "--database-url", url], input=stdin, env={"PHARAON_ALLOW_TEST_BLOCKS": "1"}
    )
    return result.exit_code, result.stdout, result.stderr


def _staff(url: str) -> None:
    """An admin (boss), an analyst (eve) and an auditor (aud)."""
    typed = f"{PASSWORD}\n{PASSWORD}\n"
    for email, role, acting in (
        ("boss@example.org", "admin", ()),
        ("eve@example.org", "analyst", ("--as", "boss@example.org")),
        ("aud@example.org", "auditor", ("--as", "boss@example.org")),
    ):
        code, out, err = _run(url, "operators", "add", email, "--role", role, *acting, stdin=typed)
        assert code == 0, err or out


def _file(tmp_path: Path, number: int) -> Path:
    path = tmp_path / f"block-{number}.parquet"
    write_block(make_block(100, size=30, number=number), path)
    return path


def _load(url: str, path: Path) -> int:
    code, out, err = _run(url, "blocks", "load", str(path), "--as", "boss@example.org")
    assert code == 0, err
    found = re.fullmatch(r"loaded block (\d+)\n", out)
    assert found is not None, out
    assert "pharaon blocks approve" in err
    return int(found.group(1))


def _approval(engine: Engine, block_id: int) -> tuple[str, str | None]:
    with make_sessionmaker(engine)() as session:
        state, by = session.execute(
            select(Block.state, Block.approved_by).where(Block.id == block_id)
        ).one()
    return str(state), by


def _refused(url: str, *args: str, code: int, says: str) -> None:
    got, out, err = _run(url, "blocks", "approve", *args)
    assert (got, out) == (code, "")
    *progress, last = err.splitlines()  # the progress of a --file's verification, then why
    assert all(line.startswith("verify: ") for line in progress), err
    assert last.startswith("pharaon: error: ")
    assert says in last


def test_an_auditor_approves_a_loaded_block_with_their_own_copy(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    _staff(database_url)
    path = _file(tmp_path, 1)
    block_id = _load(database_url, path)
    assert _approval(engine, block_id) == ("loaded", None)
    code, out, _ = _run(database_url, "blocks", "list")
    assert (code, "loaded, awaiting approval" in out) == (0, True)

    url = database_url
    _refused(url, str(block_id), code=2, says="--as EMAIL")
    _refused(url, str(block_id), "--as", "eve@example.org", code=2, says="only an auditor")
    _refused(url, str(block_id), "--as", "boss@example.org", code=2, says="only an auditor")
    _refused(url, "9", "--as", "aud@example.org", code=1, says="no block with id 9")
    other = _file(tmp_path, 2)  # a valid block file, not the one loaded
    _refused(
        url,
        str(block_id),
        "--as",
        "aud@example.org",
        "--file",
        str(other),
        code=1,
        says=f"is not loaded block {block_id}: its units SHA-256 or Merkle root differs",
    )
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    _refused(url, str(block_id), "--as", "aud@example.org", "--file", str(junk), code=1, says="")
    assert _approval(engine, block_id) == ("loaded", None)

    code, out, err = _run(
        url, "blocks", "approve", str(block_id), "--as", "aud@example.org", "--file", str(path)
    )
    assert code == 0, err
    assert out.startswith(f"block {block_id} approved (on sale): OK: 30 units, ")
    assert out.count("\n") == 1
    assert _approval(engine, block_id) == ("open", "operator:aud@example.org")
    _refused(url, str(block_id), "--as", "aud@example.org", code=1, says="already approved")
    with make_sessionmaker(engine)() as session:
        [(actor, payload)] = session.execute(
            select(AuditRecord.actor, AuditRecord.payload).where(
                AuditRecord.kind == "block_approved"
            )
        ).all()
    assert actor == "operator:aud@example.org"
    figures = json.loads(payload)["verification"]
    assert (figures["block_id"], figures["ok"], figures["units"]) == (block_id, True, 30)


def test_a_tampered_stored_block_is_not_approved(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    _staff(database_url)
    path = _file(tmp_path, 1)
    block_id = _load(database_url, path)
    with engine.begin() as conn:
        conn.execute(
            update(UnitRow)
            .where(UnitRow.block_id == block_id, UnitRow.serial == 5)
            .values(lot_cents=UnitRow.lot_cents + 100)
        )
    # The auditor's own copy is right: the stored units are what fails.
    _refused(
        database_url,
        str(block_id),
        "--as",
        "aud@example.org",
        "--file",
        str(path),
        code=1,
        says=f"block {block_id} fails its verification: ",
    )
    assert _approval(engine, block_id) == ("loaded", None)
