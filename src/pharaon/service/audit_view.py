"""The audit log for the back office: read a page of it, filtered by kind and actor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from pharaon.store.tables import AuditRecord


@dataclass(frozen=True, slots=True)
class AuditLine:
    seq: int
    created_at: datetime
    kind: str
    actor: str
    payload: str
    sha256: str


@dataclass(frozen=True, slots=True)
class AuditPage:
    total: int
    lines: tuple[AuditLine, ...]


def audit_page(
    *,
    connection: Connection,
    offset: int = 0,
    limit: int = 50,
    kind: str | None = None,
    actor: str | None = None,
) -> AuditPage:
    """Records newest first, ``limit`` from ``offset``, of ``kind`` and ``actor`` if given."""
    where = []
    if kind:
        where.append(AuditRecord.kind == kind)
    if actor:
        where.append(AuditRecord.actor == actor)
    total = connection.execute(select(func.count()).select_from(AuditRecord).where(*where)).scalar()
    rows = connection.execute(
        select(AuditRecord)
        .where(*where)
        .order_by(AuditRecord.seq.desc())
        .offset(offset)
        .limit(limit)
    )
    lines = tuple(
        AuditLine(r.seq, r.created_at, r.kind, r.actor, r.payload, r.sha256) for r in rows
    )
    return AuditPage(int(total or 0), lines)
