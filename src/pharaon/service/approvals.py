"""An auditor's sign-off before sale: a loaded block stays off sale until an operator with the
``auditor`` role, not the one who loaded it, has the server verify what it will actually sell
(:func:`verify_loaded`: the stored units, not the block file) and approves it
(:func:`approve`); the approval, with the verification's figures, goes to the audit log.

Each function works in the caller's transaction and neither commits nor rolls back. The
verification reads a block's units and evaluates them (seconds for a million): the server runs
it through the reader, then approves through the writer with its figures.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from pharaon.game.batch import SYMBOLS
from pharaon.game.money import format_cents
from pharaon.pool.blockfile import BlockFileError, Manifest, ticket_bytes, units_sha256
from pharaon.pool.merkle import leaf_hashes, merkle_root
from pharaon.pool.stats import fairness
from pharaon.pool.verify import audit_units
from pharaon.service import audit, checkpoints
from pharaon.service.blocks import open_next
from pharaon.service.errors import (
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    VerificationFailedError,
)
from pharaon.store.tables import Block, BlockPrize, UnitRow

# Units read per statement: bounds the rows a driver holds at once.
CHUNK = 100_000
_CELLS = 64


@dataclass(frozen=True, slots=True)
class LotCount:
    """Units winning ``amount_cents`` in the stored units, and as many as the block's prize
    table (its manifest's) says."""

    amount_cents: int
    found: int
    table: int


@dataclass(frozen=True, slots=True)
class Verification:
    """What the server found of a loaded block's stored units: ``ok`` when no ``problems``.
    ``fairness`` is :meth:`pharaon.pool.stats.Fairness.as_json` (None when the units could
    not be evaluated); near-miss measures apart count as a problem on a regulation block only
    (the tests' small blocks are too small for their tolerance); the order tests are figures
    for the auditor's judgement, never a problem (a fair block fails them one time in a
    hundred)."""

    block_id: int
    ok: bool
    problems: tuple[str, ...]
    units: int
    lots: tuple[LotCount, ...]
    units_sha256_matched: bool
    merkle_root_matched: bool
    fairness: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        return {
            "block_id": self.block_id,
            "ok": self.ok,
            "problems": list(self.problems),
            "units": self.units,
            "lots": [
                {"amount_cents": x.amount_cents, "found": x.found, "table": x.table}
                for x in self.lots
            ],
            "units_sha256_matched": self.units_sha256_matched,
            "merkle_root_matched": self.merkle_root_matched,
            "fairness": self.fairness,
        }

    @property
    def summary(self) -> str:
        """One line: the verdict, the units, the winners and their lots."""
        if not self.ok:
            more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return f"FAILED: {self.problems[0]}{more}"
        winners = sum(x.found for x in self.lots)
        total = sum(x.found * x.amount_cents for x in self.lots)
        measures = ""
        if self.fairness is not None:
            alike = "alike" if self.fairness.get("alike", False) else "APART"
            order = "passed" if self.fairness.get("ok", False) else "FLAG A PATTERN"
            measures = f", near-miss measures {alike}, order tests {order} (see the figures)"
        return (
            f"OK: {self.units:,} units, {winners:,} winning, {format_cents(total)} of lots, "
            f"units SHA-256 and Merkle root match{measures}"
        )


def _read_units(
    connection: Connection, block_id: int, size: int
) -> tuple[NDArray[np.int8], NDArray[np.int64]] | str:
    """(units (size, 64) int8, lots_cents (size,) int64) of block ``block_id`` in serial order,
    or what is wrong with them (a serial missing or extra, cells not 64 bytes)."""
    stored = connection.execute(
        select(func.count()).select_from(UnitRow).where(UnitRow.block_id == block_id)
    ).scalar_one()
    if stored != size:
        return f"the block holds {stored:,} stored units, its size is {size:,}"
    units = np.empty((size, _CELLS), dtype=np.int8)
    lots = np.empty(size, dtype=np.int64)
    for first in range(1, size + 1, CHUNK):
        last = min(first + CHUNK - 1, size)
        result = connection.execute(
            select(UnitRow.cells, UnitRow.lot_cents)
            .where(UnitRow.block_id == block_id, UnitRow.serial.between(first, last))
            .order_by(UnitRow.serial)
        )
        try:
            # The driver's rows as they come: bytes and ints need no processing, and a
            # million of SQLAlchemy's rows cost more than the rest of the verification.
            rows = result.cursor.fetchall()
        finally:
            result.close()
        if len(rows) != last - first + 1:
            return f"stored units {first:,} to {last:,}: {len(rows):,} found"
        cells = [r[0] for r in rows]
        blob = b"".join(cells)
        if len(blob) != len(cells) * _CELLS:
            bad = next(i for i, c in enumerate(cells) if len(c) != _CELLS)
            return f"unit {first + bad}: its cells hold {len(cells[bad])} bytes, not {_CELLS}"
        units[first - 1 : last] = np.frombuffer(blob, dtype=np.int8).reshape(-1, _CELLS)
        lots[first - 1 : last] = np.fromiter((r[1] for r in rows), np.int64, count=len(rows))
    return units, lots


def _lot_counts(m: Manifest, lots: NDArray[np.int64]) -> tuple[LotCount, ...]:
    amounts, counts = np.unique(lots[lots > 0], return_counts=True)
    found = dict(zip(amounts.tolist(), counts.tolist(), strict=True))
    table = {t.amount_cents: t.lots for t in m.prize_table}
    return tuple(
        LotCount(int(a), int(found.get(a, 0)), int(table.get(a, 0)))
        for a in sorted(set(found) | set(table), reverse=True)
    )


def _failed(block_id: int, size: int, problem: str) -> Verification:
    return Verification(block_id, False, (problem,), size, (), False, False, None)


def verify_loaded(*, connection: Connection, block_id: int) -> Verification:
    """The server's own verification of block ``block_id`` as stored, i.e. of what it sells:
    every stored unit evaluated again (:func:`pharaon.pool.verify.audit_units`: lots, prize
    table, cumulation rule, compositions, against the block's manifest), its units' SHA-256
    and Merkle root computed from the stored units and compared with the block's, the prize
    counts the sales read compared with the units, and the near-miss measures and order tests
    (:func:`pharaon.pool.stats.fairness`). :class:`NotFoundError` if there is no such block."""
    row = connection.execute(
        select(Block.block_size, Block.units_sha256, Block.merkle_root, Block.manifest_json).where(
            Block.id == block_id
        )
    ).first()
    if row is None:
        raise NotFoundError(f"no block with id {block_id}")
    size = int(row.block_size)
    try:
        m = Manifest.from_json(json.loads(row.manifest_json))
    except (BlockFileError, ValueError) as exc:
        return _failed(block_id, size, f"the stored manifest: {exc}")
    read = _read_units(connection, block_id, size)
    if isinstance(read, str):
        return _failed(block_id, size, read)
    units, lots = read
    if size and (units.min() < 0 or units.max() >= SYMBOLS):
        bad = int(np.argmax(((units < 0) | (units >= SYMBOLS)).any(axis=1)))
        return _failed(block_id, size, f"unit {bad + 1}: a cell is not a symbol (0..5)")
    tickets = ticket_bytes(units)
    # The hashing kernels, the numba evaluator and numpy release the GIL: hash and measure
    # while evaluating.
    with ThreadPoolExecutor(max_workers=3) as pool:
        digest = pool.submit(units_sha256, tickets)
        root = pool.submit(lambda: merkle_root(leaf_hashes(tickets, lots)))
        measured = pool.submit(fairness, units, lots)
        problems = audit_units(m, units, lots)
        sha_matched = digest.result() == row.units_sha256
        root_matched = root.result() == row.merkle_root
        fair = measured.result()
    if not sha_matched:
        problems.append("units_sha256 of the stored units differs from the block's")
    if not root_matched:
        problems.append("the Merkle root of the stored units differs from the block's")
    if (m.units_sha256, m.merkle_root) != (row.units_sha256, row.merkle_root):
        problems.append("the block's units_sha256 or Merkle root differs from its manifest's")
    found = _lot_counts(m, lots)
    prizes = dict(
        connection.execute(
            select(BlockPrize.lot_cents, BlockPrize.units).where(BlockPrize.block_id == block_id)
        ).all()
    )
    if {x.amount_cents: x.found for x in found if x.found} != prizes:
        problems.append("the block's prize counts (what the sales read) differ from its units")
    if not fair.alike and not m.test:
        apart = [x.name for x in fair.measures if not x.alike]
        problems.append(f"near-miss measures more than one point apart: {', '.join(apart)}")
    return Verification(
        block_id=block_id,
        ok=not problems,
        problems=tuple(problems),
        units=size,
        lots=found,
        units_sha256_matched=sha_matched,
        merkle_root_matched=root_matched,
        fairness=fair.as_json(),
    )


def approve(
    *, session: Session, block_id: int, actor: str, figures: Verification, now: datetime
) -> str:
    """Approve loaded block ``block_id`` for sale as ``actor`` (an auditor: the caller checked
    the role), with ``figures``, its verification (:func:`verify_loaded`); it opens if no block
    is on sale at its price. One conditional update, so of two auditors approving at once one
    does and the other gets :class:`ConflictError`. Refuses a failed verification
    (:class:`VerificationFailedError`), the operator who loaded the block
    (:class:`ForbiddenError`), a block not ``loaded`` or already approved
    (:class:`ConflictError`), and an unknown one (:class:`NotFoundError`). An audit record
    ``block_approved`` with the figures, and a checkpoint of the audit chain. Returns the
    block's state after: ``open``, or ``loaded`` while another is on sale at its price."""
    if figures.block_id != block_id:
        raise InvalidError(f"the figures are of block {figures.block_id}, not of {block_id}")
    if not figures.ok:
        raise VerificationFailedError(
            f"block {block_id} fails its verification: " + "; ".join(figures.problems[:3])
        )
    approved = session.execute(
        update(Block)
        .where(
            Block.id == block_id,
            Block.state == "loaded",
            Block.approved_at.is_(None),
            Block.loaded_by.is_distinct_from(actor),
        )
        .values(approved_at=now, approved_by=actor)
        .returning(Block.price_cents, Block.emission, Block.block_number, Block.loaded_by)
    ).first()
    if approved is None:
        _refuse(session, block_id, actor)
    on_sale = open_next(session, price_cents=int(approved.price_cents))
    audit.append(
        session,
        kind="block_approved",
        actor=actor,
        payload={
            "block_id": block_id,
            "emission": approved.emission,
            "price_cents": int(approved.price_cents),
            "block_number": int(approved.block_number),
            "loaded_by": approved.loaded_by,
            "verification": figures.as_json(),
        },
        now=now,
    )
    checkpoints.take(session, reason="block_approved", now=now)
    return "open" if on_sale == block_id else "loaded"


def _refuse(session: Session, block_id: int, actor: str) -> NoReturn:
    """Raise why :func:`approve`'s update found nothing to approve."""
    row = session.execute(
        select(Block.state, Block.approved_by, Block.loaded_by).where(Block.id == block_id)
    ).first()
    if row is None:
        raise NotFoundError(f"no block with id {block_id}")
    if row.approved_by is not None:
        raise ConflictError(f"block {block_id} is already approved (by {row.approved_by})")
    if row.state != "loaded":
        raise ConflictError(f"block {block_id} is {row.state}; only a loaded block is approved")
    raise ForbiddenError(f"block {block_id} was loaded by {actor}: another auditor must approve it")


def verify_and_approve(*, session: Session, block_id: int, actor: str, now: datetime) -> str:
    """Verify block ``block_id`` and approve it as ``actor``, in one transaction: the first
    start's demo blocks and the tests' (a deployment's auditor reads the figures first)."""
    figures = verify_loaded(connection=session.connection(), block_id=block_id)
    return approve(session=session, block_id=block_id, actor=actor, figures=figures, now=now)
