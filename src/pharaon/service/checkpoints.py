"""Checkpoints of the audit chain: its head (sequence and hash, never a player's data) taken at
each block load and at least daily, and published (``GET /api/v1/audit/checkpoints``).

Whoever keeps a copy of a checkpoint can tell later that the chain still passes through it
(:func:`pharaon.service.audit.run_audit` checks the stored ones, and copies given to it): a chain
rewritten from scratch, even consistently, no longer does.

The daily one is taken by the server (:func:`take_if_due`, at start and every hour, see
``web/app.py``) rather than by ``pharaon audit``: the server is what runs every day, an audit
is run when someone thinks of it. With several workers, the head's lock makes one take it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.orm import Session

from pharaon.store.tables import AuditCheckpoint, AuditHead

DAY = timedelta(days=1)
_LOCK_HEAD = select(AuditHead.seq, AuditHead.sha256).where(AuditHead.id == 1).with_for_update()


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The chain's head at ``taken_at``: record ``seq`` has hash ``sha256``."""

    seq: int
    sha256: str
    taken_at: datetime
    reason: str  # block_loaded, daily


def take(session: Session, *, reason: str, now: datetime) -> Checkpoint:
    """Record the chain's head as it is in the caller's transaction (the caller commits)."""
    seq, digest = session.execute(_LOCK_HEAD).one()
    session.execute(
        insert(AuditCheckpoint).values(seq=seq, sha256=digest, taken_at=now, reason=reason)
    )
    return Checkpoint(int(seq), str(digest), now, reason)


def take_if_due(session: Session, *, now: datetime, max_age: timedelta = DAY) -> bool:
    """Take a ``daily`` checkpoint, in the caller's transaction (the caller commits), if the
    last is older than ``max_age`` (or there is none); whether one was taken. The head is
    locked first, so that of concurrent callers one takes it."""
    session.execute(_LOCK_HEAD).one()
    last = session.execute(select(func.max(AuditCheckpoint.taken_at))).scalar_one_or_none()
    if last is not None and now - last < max_age:
        return False
    take(session, reason="daily", now=now)
    return True


def list_checkpoints(*, connection: Connection) -> list[Checkpoint]:
    """Every checkpoint, oldest first."""
    rows = connection.execute(
        select(
            AuditCheckpoint.seq,
            AuditCheckpoint.sha256,
            AuditCheckpoint.taken_at,
            AuditCheckpoint.reason,
        ).order_by(AuditCheckpoint.id)
    )
    return [Checkpoint(int(s), str(h), t, str(r)) for s, h, t, r in rows]
