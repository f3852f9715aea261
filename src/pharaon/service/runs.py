"""A block's sale order, sold in runs: the serials 1 to N cut into K runs of consecutive
serials, each sold in order from its first, so that K sales at one price at the same moment
lock K rows instead of one (the hot row of a single sale order).

A sale takes its units from the first run at the block's price that no other sale holds
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite has one writer, which takes the runs in
order, so there the block sells in serial order whatever K). Within a run no unit is sold
twice nor skipped; when every run is sold out the block is, every unit sold once, and the next
loaded block at that price opens.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import blocks
from pharaon.store.tables import Block, SaleRun

_OPEN_RUNS = (
    select(SaleRun.block_id, SaleRun.run, SaleRun.next_serial, SaleRun.last_serial)
    .join(Block, Block.id == SaleRun.block_id)
    .where(
        Block.price_cents == bindparam("price"),
        Block.state == "open",
        SaleRun.next_serial <= SaleRun.last_serial,
    )
    .order_by(SaleRun.run)
    .limit(1)
)
# The first run no other sale holds; else the first run, waiting for the sale that holds it.
_FREE_RUN = _OPEN_RUNS.with_for_update(of=SaleRun, skip_locked=True)
_ANY_RUN = _OPEN_RUNS.with_for_update(of=SaleRun)
_ADVANCE = (
    update(SaleRun)
    .where(SaleRun.block_id == bindparam("block"), SaleRun.run == bindparam("which"))
    .values(next_serial=bindparam("next"))
)
_LEFT = select(func.count()).where(
    SaleRun.block_id == bindparam("block"), SaleRun.next_serial <= SaleRun.last_serial
)
_OPEN_BLOCK = (
    select(Block.id)
    .where(Block.price_cents == bindparam("price"), Block.state == "open")
    .with_for_update()
)


def cut(block_size: int, runs: int) -> list[tuple[int, int]]:
    """(first serial, last serial) of each of ``runs`` runs of a block of ``block_size``
    units, in order, as even as they come; no more runs than units."""
    if block_size < 1 or runs < 1:
        raise ValueError(f"a block has units and runs, got {block_size} units, {runs} runs")
    runs = min(runs, block_size)
    bounds = [block_size * k // runs for k in range(runs + 1)]
    return [(bounds[k] + 1, bounds[k + 1]) for k in range(runs)]


def lay_out(session: Session, *, block_id: int, block_size: int, runs: int) -> None:
    """The runs of a block being loaded, in the caller's transaction, none of it sold."""
    session.execute(
        insert(SaleRun),
        [
            {"block_id": block_id, "run": k, "first_serial": a, "last_serial": b, "next_serial": a}
            for k, (a, b) in enumerate(cut(block_size, runs))
        ],
    )


def take(session: Session, *, price_cents: int, count: int) -> list[tuple[int, int]]:
    """Up to ``count`` units on sale at ``price_cents``, taken in the caller's transaction:
    (block id, serial) in the order taken, fewer when the price sells out. The runs taken stay
    locked until the caller commits."""
    connection = session.connection()
    taken: list[tuple[int, int]] = []
    while len(taken) < count:
        row = connection.execute(_FREE_RUN, {"price": price_cents}).first()
        if row is None:  # every run left is held by another sale: wait for one
            row = connection.execute(_ANY_RUN, {"price": price_cents}).first()
        if row is None:  # none left: the next block, if there is one
            if not _next_block(session, connection, price_cents):
                break
            continue
        block_id, run, next_serial, last_serial = (int(v) for v in row)
        end = min(next_serial + count - len(taken), last_serial + 1)
        connection.execute(_ADVANCE, {"block": block_id, "which": run, "next": end})
        taken += [(block_id, serial) for serial in range(next_serial, end)]
        if end > last_serial and not connection.execute(_LEFT, {"block": block_id}).scalar():
            _sold_out(session, connection, block_id, price_cents)
    return taken


def _next_block(session: Session, connection: Connection, price_cents: int) -> bool:
    """The open block at ``price_cents`` has no run left (or there is none): it is sold out
    and the next loaded one opens; whether a block is on sale after."""
    open_id = connection.execute(_OPEN_BLOCK, {"price": price_cents}).scalar_one_or_none()
    if open_id is not None:
        if connection.execute(_LEFT, {"block": open_id}).scalar():
            return True  # a run was given back meanwhile: take it
        _sold_out(session, connection, int(open_id), price_cents)
    return blocks.open_next(session, price_cents=price_cents) is not None


def _sold_out(session: Session, connection: Connection, block_id: int, price_cents: int) -> None:
    connection.execute(
        update(Block).where(Block.id == block_id, Block.state == "open").values(state="sold_out")
    )
    blocks.open_next(session, price_cents=price_cents)
