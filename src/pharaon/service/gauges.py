"""What the server's metrics read from the database when scraped: cheap counts, one statement
each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from pharaon.service import stock
from pharaon.service.blocks import sold_units
from pharaon.store.tables import UNFINISHED_JOUER, Block, PlayRow


@dataclass(frozen=True, slots=True)
class PoolUse:
    """The block on sale at ``price_cents``: units sold and units left."""

    price_cents: int
    block_id: int
    sold: int
    remaining: int


def pending_reveals(*, connection: Connection) -> int:
    """« Jouer » plays not fully uncovered yet (read from the partial index
    ``ix_plays_unfinished``)."""
    count = connection.execute(select(func.count()).select_from(PlayRow).where(UNFINISHED_JOUER))
    return int(count.scalar_one())


def pool_use(*, connection: Connection) -> list[PoolUse]:
    """The open blocks (at most one per price), by price."""
    rows = connection.execute(
        select(Block.price_cents, Block.id, Block.block_size)
        .where(Block.state == "open")
        .order_by(Block.price_cents)
    ).all()
    sold = sold_units(connection, [block_id for _, block_id, _ in rows])
    return [
        PoolUse(
            price_cents=price,
            block_id=block_id,
            sold=sold.get(block_id, 0),
            remaining=size - sold.get(block_id, 0),
        )
        for price, block_id, size in rows
    ]


@dataclass(frozen=True, slots=True)
class Gauges:
    """What a scrape of the metrics reads from the database."""

    pending_reveals: int
    pools: tuple[PoolUse, ...]
    watch: stock.Watch


def look(*, connection: Connection, now: datetime, thresholds: stock.Thresholds) -> Gauges:
    """The gauges, read in the caller's transaction (one snapshot)."""
    return Gauges(
        pending_reveals(connection=connection),
        tuple(pool_use(connection=connection)),
        stock.watch(connection=connection, now=now, thresholds=thresholds),
    )
