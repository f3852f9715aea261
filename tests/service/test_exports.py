"""Regulator exports re-read: CSV and Parquet agree, the manifest's hashes hold, and the totals
equal the ledger's; on both databases, through ``pharaon export-sales``."""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner
from sqlalchemy import Engine, func, select

from pharaon.cli import app
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, LedgerEntry, PlayRow
from tests.conftest import BlockLoader, Player


def _export(database_url: str, first: str, last: str, out: Path) -> tuple[int, str]:
    args = ["export-sales", "--from", first, "--to", last, "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--database-url", database_url])
    return result.exit_code, result.stderr


def test_export_a_day(
    engine: Engine, database_url: str, load: BlockLoader, player: Player, tmp_path: Path
) -> None:
    load(100, size=30)
    player.deposit(1_000)
    for _ in range(3):
        assert player.play(100).status_code == 201
    today = utcnow().date()
    out = tmp_path / "export"
    code, err = _export(database_url, today.isoformat(), today.isoformat(), out)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    with make_sessionmaker(engine)() as session:
        ledger_sum = session.execute(select(func.sum(LedgerEntry.amount_cents))).scalar()
        ledger_rows = session.execute(select(func.count()).select_from(LedgerEntry)).scalar()
        stakes = session.execute(select(func.sum(PlayRow.stake_cents))).scalar()
        prizes = session.execute(select(func.sum(PlayRow.prize_cents))).scalar()
        records = session.execute(select(func.count()).select_from(AuditRecord)).scalar()
    entries = pq.read_table(out / "ledger_entries.parquet").to_pydict()
    assert len(entries["amount_cents"]) == ledger_rows
    assert sum(entries["amount_cents"]) == ledger_sum == 0
    with (out / "ledger_entries.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["amount_cents"]) for r in rows] == entries["amount_cents"]
    played = pq.read_table(out / "plays.parquet").to_pydict()
    assert (sum(played["stake_cents"]), sum(played["prize_cents"])) == (stakes, prizes)
    assert len(played["play_id"]) == 3
    assert (
        manifest["rows"]["audit_records"] == (records or 0) - 1
    )  # the export's own record follows

    # An empty folder only, and the day before holds nothing.
    code, err = _export(database_url, today.isoformat(), today.isoformat(), out)
    assert code == 2
    assert "not empty" in err
    before = (today - timedelta(days=1)).isoformat()
    empty = tmp_path / "empty"
    code, err = _export(database_url, before, before, empty)
    assert code == 0, err
    assert json.loads((empty / "manifest.json").read_text())["rows"]["plays"] == 0
    assert pq.read_table(empty / "plays.parquet").num_rows == 0


def test_the_last_day_a_date_holds_is_one_line_not_a_traceback(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["export-sales", "--from", "2026-01-01", "--to", "9999-12-31", "--out", str(tmp_path / "x"),
         "--database-url", database_url],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.output.endswith(
        "pharaon: error: --to 9999-12-31 is the last day a date can hold: give an earlier one\n"
    )
    assert not (tmp_path / "x").exists()
