"""The operator's blocks: list, deactivate, open the next, and what is left to win.

A block is ``loaded``, then ``open`` (on sale; at most one per price), then ``sold_out``; or
``deactivated`` by the operator. A loaded block opens only once an auditor approved it
(:mod:`pharaon.service.approvals`): when the open block at a price sells out, the next loaded
and approved one at that price (lowest id) opens. Loading is in :mod:`pharaon.service.loading`
(it needs the block factory, which the server does not). Each function works in the caller's
transaction and neither commits nor rolls back: the caller owns the unit of work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from pharaon.game.rules import rules
from pharaon.service import audit
from pharaon.service.errors import ConflictError, InvalidError, NotFoundError
from pharaon.store.tables import UNFINISHED_JOUER, Block, BlockPrize, PlayRow, SaleRun

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class BlockSummary:
    block_id: int
    game: str
    emission: str
    price_cents: int
    block_number: int
    block_size: int
    is_test: bool
    state: str
    sold: int
    remaining_lots: tuple[tuple[int, int], ...]  # (lot_cents, units left), largest first
    deactivation_reason: str | None
    loaded_by: str | None = None  # the audit actor who loaded it (None before migration 0009)
    approved_at: datetime | None = None  # None: awaiting an auditor's approval
    approved_by: str | None = None


@dataclass(frozen=True, slots=True)
class PublishedBlock:
    """What anyone may know of a loaded block: its identity and its commitments (the Merkle
    root and units SHA-256, and the SHA-256 of each key, None for blocks made before the
    manifest carried them)."""

    block_id: int
    emission: str
    block_number: int
    price_cents: int
    block_size: int
    is_test: bool
    merkle_root: str
    units_sha256: str
    loaded_at: datetime
    state: str
    vendor_key_commitment: str | None
    operator_key_commitment: str | None


def _commitment(manifest: dict[str, object], name: str) -> str | None:
    value = manifest.get(name)
    return value if isinstance(value, str) else None


def published_blocks(*, connection: Connection) -> list[PublishedBlock]:
    """Every loaded block, oldest first, as :class:`PublishedBlock`."""
    out = []
    for b in connection.execute(
        select(
            Block.id,
            Block.emission,
            Block.block_number,
            Block.price_cents,
            Block.block_size,
            Block.is_test,
            Block.merkle_root,
            Block.units_sha256,
            Block.loaded_at,
            Block.state,
            Block.manifest_json,
        ).order_by(Block.id)
    ):
        manifest = json.loads(b.manifest_json)
        out.append(
            PublishedBlock(
                block_id=int(b.id),
                emission=str(b.emission),
                block_number=int(b.block_number),
                price_cents=int(b.price_cents),
                block_size=int(b.block_size),
                is_test=bool(b.is_test),
                merkle_root=str(b.merkle_root),
                units_sha256=str(b.units_sha256),
                loaded_at=b.loaded_at,
                state=str(b.state),
                vendor_key_commitment=_commitment(manifest, "vendor_key_commitment"),
                operator_key_commitment=_commitment(manifest, "operator_key_commitment"),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class BlockIdentity:
    """What a sale's receipt signs of its block (none of it ever changes)."""

    emission: str
    block_number: int
    price_cents: int
    merkle_root: str  # as its proofs lead to


def identity(*, connection: Connection, block_id: int) -> BlockIdentity:
    """Block ``block_id``'s :class:`BlockIdentity`."""
    row = connection.execute(
        select(Block.emission, Block.block_number, Block.price_cents, Block.merkle_root).where(
            Block.id == block_id
        )
    ).one()
    return BlockIdentity(
        str(row.emission), int(row.block_number), int(row.price_cents), str(row.merkle_root)
    )


def sold_units(connection: Connection, block_ids: Iterable[int] | None = None) -> dict[int, int]:
    """Units sold by block (every block, or those of ``block_ids``): what its runs have sold
    (:mod:`pharaon.service.runs`)."""
    query: Any = select(SaleRun.block_id, func.sum(SaleRun.next_serial - SaleRun.first_serial))
    if block_ids is not None:
        query = query.where(SaleRun.block_id.in_(list(block_ids)))
    return {int(b): int(n) for b, n in connection.execute(query.group_by(SaleRun.block_id))}


def open_next(session: Session, *, price_cents: int) -> int | None:
    """Open the next loaded and approved block at ``price_cents`` if none is open; its id, or
    None."""
    open_id = session.execute(
        select(Block.id).where(Block.price_cents == price_cents, Block.state == "open")
    ).scalar_one_or_none()
    if open_id is not None:
        return int(open_id)
    next_id = session.execute(
        select(func.min(Block.id)).where(
            Block.price_cents == price_cents,
            Block.state == "loaded",
            Block.approved_at.is_not(None),
        )
    ).scalar_one_or_none()
    if next_id is None:
        return None
    opened = session.execute(
        update(Block)
        .where(Block.id == next_id, Block.state == "loaded", Block.approved_at.is_not(None))
        .values(state="open")
        .returning(Block.id)
    ).scalar_one_or_none()
    return None if opened is None else int(opened)


def _sold_lots(connection: Connection, block_ids: list[int]) -> dict[tuple[int, int], int]:
    """Winning units sold, by (block, lot), less those of jouer plays not yet finished: their
    lots are still to be told, and a count that moved at the purchase would tell them."""
    rows = connection.execute(
        select(PlayRow.block_id, PlayRow.prize_cents, func.count())
        .where(PlayRow.block_id.in_(block_ids), PlayRow.prize_cents > 0)
        .group_by(PlayRow.block_id, PlayRow.prize_cents)
    )
    sold = {(b, p): n for b, p, n in rows}
    for b, p, n in connection.execute(
        select(PlayRow.block_id, PlayRow.prize_cents, func.count())
        .where(PlayRow.block_id.in_(block_ids), PlayRow.prize_cents > 0, UNFINISHED_JOUER)
        .group_by(PlayRow.block_id, PlayRow.prize_cents)
    ):
        sold[(b, p)] -= n
    return sold


def _remaining(connection: Connection, block_ids: list[int]) -> dict[int, list[tuple[int, int]]]:
    sold = _sold_lots(connection, block_ids)
    out: dict[int, list[tuple[int, int]]] = {b: [] for b in block_ids}
    for block_id, lot, units in connection.execute(
        select(BlockPrize.block_id, BlockPrize.lot_cents, BlockPrize.units)
        .where(BlockPrize.block_id.in_(block_ids))
        .order_by(BlockPrize.block_id, BlockPrize.lot_cents.desc())
    ):
        out[block_id].append((lot, units - sold.get((block_id, lot), 0)))
    return out


def list_blocks(*, connection: Connection) -> list[BlockSummary]:
    """Every block, by id, with its units sold and lots left (read in the caller's
    transaction, which sees them in one snapshot)."""
    blocks = connection.execute(select(Block).order_by(Block.id)).all()
    remaining = _remaining(connection, [b.id for b in blocks])
    sold = sold_units(connection)
    return [
        BlockSummary(
            block_id=b.id,
            game=b.game,
            emission=b.emission,
            price_cents=b.price_cents,
            block_number=b.block_number,
            block_size=b.block_size,
            is_test=b.is_test,
            state=b.state,
            sold=sold.get(b.id, 0),
            remaining_lots=tuple(remaining[b.id]),
            deactivation_reason=b.deactivation_reason,
            loaded_by=b.loaded_by,
            approved_at=b.approved_at,
            approved_by=b.approved_by,
        )
        for b in blocks
    ]


def remaining_prizes(*, connection: Connection, stake_cents: int) -> list[tuple[int, int]]:
    """(lot_cents, units left) in the block on sale at ``stake_cents`` (or the next to open:
    an approved one), largest first; empty when nothing is left to sell at that price. The
    lots a block holds never change and its sales only grow, so the statements need no common
    snapshot."""
    try:
        rules().multiplier(stake_cents)
    except ValueError as exc:
        raise InvalidError(str(exc)) from exc
    block_id = connection.execute(
        select(Block.id)
        .where(
            Block.price_cents == stake_cents,
            (Block.state == "open") | ((Block.state == "loaded") & Block.approved_at.is_not(None)),
        )
        .order_by((Block.state == "open").desc(), Block.id)
        .limit(1)
    ).scalar_one_or_none()
    if block_id is None:
        return []
    return _remaining(connection, [int(block_id)])[int(block_id)]


def deactivate(*, session: Session, block_id: int, reason: str, actor: str, now: datetime) -> None:
    """Stop a block's sales (logged), in the caller's transaction; its past plays stay as
    they are. The block's row stays locked until the caller commits."""
    reason = reason.strip()
    if not reason:
        raise InvalidError("a reason is required to deactivate a block")
    row = session.execute(
        select(Block.state, Block.price_cents).where(Block.id == block_id).with_for_update()
    ).first()
    if row is None:
        raise NotFoundError(f"no block with id {block_id}")
    if row.state not in ("loaded", "open"):
        raise ConflictError(f"block {block_id} is {row.state}; only loaded or open blocks stop")
    session.execute(
        update(Block)
        .where(Block.id == block_id)
        .values(state="deactivated", deactivated_at=now, deactivation_reason=reason)
    )
    if row.state == "open":
        open_next(session, price_cents=row.price_cents)
    audit.append(
        session,
        kind="block_deactivated",
        actor=actor,
        payload={"block_id": block_id, "reason": reason, "was": row.state},
        now=now,
    )
