"""Checkpoints of the audit chain: its head (sequence and hash, never a player's data) taken at
each block load and approval and at least daily, and published (``GET /api/v1/audit/checkpoints``).

Whoever keeps a copy of a checkpoint can tell later that the chain still passes through it
(:func:`pharaon.service.audit.run_audit` checks the stored ones, and copies given to it): a chain
rewritten from scratch, even consistently, no longer does.

The daily one is taken by the server (:func:`take_if_due`, at start and every hour, see
``web/app.py``) rather than by ``pharaon audit``: the server is what runs every day, an audit
is run when someone thinks of it. With several workers, the head's lock makes one take it.

Each checkpoint also carries the root of the audit log's Merkle tree at its ``seq``
(service/logtree.py), which the server signs as a C2SP checkpoint (service/transparency.py).
Taking one extends the stored tree to it: locks are taken in one order, the tree's then the
head's, so a block load (which holds the head already) only extends the tree if no one else is
at it, else leaves the root to the next look of the chores (:func:`take_if_due`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import logtree
from pharaon.store.tables import AuditCheckpoint, AuditHead

DAY = timedelta(days=1)
_LOCK_HEAD = select(AuditHead.seq, AuditHead.sha256).where(AuditHead.id == 1).with_for_update()


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The chain's head at ``taken_at``: record ``seq`` has hash ``sha256``."""

    seq: int
    sha256: str
    taken_at: datetime
    reason: str  # block_loaded, block_approved, keys_revealed, daily
    root: str | None = None  # hex: the Merkle tree's over records 1..seq (None: not yet)


def take(session: Session, *, reason: str, now: datetime) -> Checkpoint:
    """Record the chain's head as it is in the caller's transaction (the caller commits), and
    the tree's root at it, the tree extended to it unless another transaction is extending it
    at this moment (the root is then filled by :func:`take_if_due`)."""
    seq, digest = session.execute(_LOCK_HEAD).one()
    root = _root(session, int(seq))
    session.execute(
        insert(AuditCheckpoint).values(
            seq=seq, sha256=digest, taken_at=now, reason=reason, root=root
        )
    )
    return Checkpoint(int(seq), str(digest), now, reason, root)


def _root(session: Session, seq: int) -> str | None:
    """The tree's root (hex) at ``seq``, the tree extended to it; None if the tree's lock is
    held elsewhere (the caller holds the head's: waiting could deadlock)."""
    size = logtree.try_lock(session)
    if size is None:
        return None
    if size < seq:
        logtree.extend(session, size=size, to=seq)
    return logtree.root(connection=session.connection(), tree_size=seq).hex()


def grow(session: Session) -> int:
    """Extend the tree to the chain's head as committed, then fill the roots of the checkpoints
    taken without one; the tree's size. Takes the tree's lock, not the head's: sales go on."""
    size = logtree.lock(session)
    head = int(session.execute(select(AuditHead.seq).where(AuditHead.id == 1)).scalar_one())
    if size < head:
        size = logtree.extend(session, size=size, to=head)
    missing = session.execute(
        select(AuditCheckpoint.id, AuditCheckpoint.seq).where(
            AuditCheckpoint.root.is_(None), AuditCheckpoint.seq <= size
        )
    ).all()
    connection = session.connection()
    for checkpoint_id, seq in missing:
        root = logtree.root(connection=connection, tree_size=int(seq)).hex()
        session.execute(
            update(AuditCheckpoint).where(AuditCheckpoint.id == checkpoint_id).values(root=root)
        )
    return size


def take_if_due(session: Session, *, now: datetime, max_age: timedelta = DAY) -> bool:
    """Extend the tree (:func:`grow`), then take a ``daily`` checkpoint, in the caller's
    transaction (the caller commits), if the last is older than ``max_age`` (or there is
    none); whether one was taken. The tree's lock, then the head's, are taken first, so that
    of concurrent callers one takes it."""
    grow(session)
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
            AuditCheckpoint.root,
        ).order_by(AuditCheckpoint.id)
    )
    return [Checkpoint(int(s), str(h), t, str(r), root) for s, h, t, r, root in rows]


def signable(*, connection: Connection, size: int | None = None) -> Checkpoint | None:
    """The last checkpoint with a root (of ``size`` records if given): what the server signs."""
    query = select(
        AuditCheckpoint.seq,
        AuditCheckpoint.sha256,
        AuditCheckpoint.taken_at,
        AuditCheckpoint.reason,
        AuditCheckpoint.root,
    ).where(AuditCheckpoint.root.is_not(None))
    if size is not None:
        query = query.where(AuditCheckpoint.seq == size)
    row = connection.execute(query.order_by(AuditCheckpoint.id.desc()).limit(1)).first()
    if row is None:
        return None
    seq, digest, taken_at, reason, root = row
    return Checkpoint(int(seq), str(digest), taken_at, str(reason), str(root))
