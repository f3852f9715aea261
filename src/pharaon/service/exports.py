"""Regulator exports: the plays, ledger entries and audit records of a period as CSV and Parquet,
amounts in integer cents, with a manifest of each file's SHA-256."""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Connection, Select, select
from sqlalchemy.orm import Session

from pharaon.service import audit
from pharaon.service.errors import InvalidError
from pharaon.store.tables import (
    Account,
    AuditRecord,
    LedgerEntry,
    LedgerTransaction,
    PlayRow,
)

MANIFEST = "manifest.json"


@dataclass(frozen=True, slots=True)
class Exported:
    folder: Path
    files: dict[str, str]  # file name: SHA-256
    rows: dict[str, int]  # table: rows


def _tables(since: datetime, until: datetime) -> dict[str, Select[Any]]:
    tables: dict[str, Any] = {
        "plays": select(
            PlayRow.id.label("play_id"),
            PlayRow.created_at,
            PlayRow.player_id,
            PlayRow.block_id,
            PlayRow.serial,
            PlayRow.mode,
            PlayRow.stake_cents,
            PlayRow.prize_cents,
            PlayRow.transaction_id,
        )
        .where(PlayRow.created_at >= since, PlayRow.created_at < until)
        .order_by(PlayRow.id),
        "ledger_entries": select(
            LedgerEntry.id.label("entry_id"),
            LedgerTransaction.id.label("transaction_id"),
            LedgerTransaction.created_at,
            LedgerTransaction.kind,
            LedgerEntry.account_id,
            Account.kind.label("account_kind"),
            Account.player_id,
            LedgerEntry.amount_cents,
        )
        .join(LedgerTransaction, LedgerTransaction.id == LedgerEntry.transaction_id)
        .join(Account, Account.id == LedgerEntry.account_id)
        .where(LedgerTransaction.created_at >= since, LedgerTransaction.created_at < until)
        .order_by(LedgerEntry.id),
        "audit_records": select(
            AuditRecord.seq,
            AuditRecord.created_at,
            AuditRecord.kind,
            AuditRecord.actor,
            AuditRecord.payload,
            AuditRecord.prev_sha256,
            AuditRecord.sha256,
        )
        .where(AuditRecord.created_at >= since, AuditRecord.created_at < until)
        .order_by(AuditRecord.seq),
    }
    return tables


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def export_period(
    *, connection: Connection, since: datetime, until: datetime, out: Path
) -> Exported:
    """Write ``out``/{table}.csv and .parquet for records from ``since`` (inclusive) to ``until``
    (exclusive), and ``out``/manifest.json with each file's SHA-256; ``out`` must be empty. The
    tables are read in the caller's transaction, which must see one snapshot (a reader's)."""
    if until <= since:
        raise InvalidError(f"the period must end after it starts: {since} .. {until}")
    if out.exists() and any(out.iterdir()):
        raise InvalidError(f"{out} is not empty: exports never overwrite")
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    counts: dict[str, int] = {}
    for name, query in _tables(since, until).items():
        result = connection.execute(query)
        columns = list(result.keys())
        rows = [tuple(r) for r in result]
        counts[name] = len(rows)
        data = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
        table = (
            pa.table(data) if rows else pa.table({c: pa.array([], pa.string()) for c in columns})
        )
        pq.write_table(table, out / f"{name}.parquet")
        with (out / f"{name}.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            for r in rows:
                writer.writerow([v.isoformat() if isinstance(v, datetime) else v for v in r])
        for suffix in ("csv", "parquet"):
            file = f"{name}.{suffix}"
            files[file] = _sha256(out / file)
    manifest = {
        "from": since.isoformat(),
        "to": until.isoformat(),
        "rows": counts,
        "sha256": files,
        "amounts": "integer cents",
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return Exported(out, files, counts)


def record_export(
    *,
    session: Session,
    exported: Exported,
    since: datetime,
    until: datetime,
    actor: str,
    now: datetime,
) -> None:
    """An ``export`` record naming ``actor``, the period and each file's SHA-256 of
    ``exported`` in the audit log, in the caller's transaction: who took the regulator's data,
    and which."""
    audit.append(
        session,
        kind="export",
        actor=actor,
        payload={"from": since.isoformat(), "to": until.isoformat(), "sha256": exported.files},
        now=now,
    )
