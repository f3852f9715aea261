"""The operator's watch over the stock of units and the sales: per price, the units left on
sale, the blocks loaded behind them and the hours they last at the last day's pace; the day's
realised payout against its statistical band; the large lots won. Each can raise an alert,
shown in the console and exposed as metrics (docs/operations.md, deploy/prometheus/).

The band: a unit's lot at price p is a draw X from its block's lots (``block_prizes``, the
units without a lot counting 0), of mean m and variance v. Over the n units sold at p since
the day began (UTC), the realised payout Σ X / (n p) has mean m / p (the planned 70 %) and
standard deviation √(v / n) / p; the band is that mean ± ``band_sigmas`` standard deviations
(draws without replacement vary less: the band is a little wide, never too narrow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, select

from pharaon.service.blocks import BlockSummary, list_blocks
from pharaon.store.tables import BlockPrize, PlayRow

DAY = timedelta(hours=24)
ALERT_KINDS = ("low_stock", "payout_band", "large_lot")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When an alert is raised (settings ``PHARAON_STOCK_ALERT_HOURS``, ...)."""

    stock_hours: float = 48.0  # stock that lasts less at the last day's pace
    stock_units: int = 100_000  # fewer units left, on sale and behind
    band_sigmas: float = 3.0  # a day's payout this far from the planned one
    large_lot_cents: int = 100_000  # a lot of at least this much (1,000 €)


@dataclass(frozen=True, slots=True)
class StockLine:
    """One price: units left in the open block, blocks loaded behind it and their units, units
    sold in the last 24 hours, and the hours the stock lasts at that pace (None: no sale)."""

    price_cents: int
    on_sale: int
    blocks_behind: int
    units_behind: int
    sold_last_day: int
    hours_left: float | None


@dataclass(frozen=True, slots=True)
class PayoutLine:
    """One price, since the UTC day began: units sold, stakes and lots, and the band."""

    price_cents: int
    units: int
    stakes_cents: int
    prizes_cents: int
    payout_bp: int
    planned_bp: int
    band_low_bp: int
    band_high_bp: int


@dataclass(frozen=True, slots=True)
class LargeLot:
    play_id: int
    player_id: int
    price_cents: int
    prize_cents: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Alert:
    """``kind``: ``low_stock``, ``payout_band`` or ``large_lot``; ``detail`` in English (logs)."""

    kind: str
    price_cents: int
    detail: str


@dataclass(frozen=True, slots=True)
class Watch:
    stock: tuple[StockLine, ...]
    payouts: tuple[PayoutLine, ...]
    large_lots: tuple[LargeLot, ...]
    alerts: tuple[Alert, ...]


def watch(*, connection: Connection, now: datetime, thresholds: Thresholds) -> Watch:
    """The stock, the day's payouts and the last day's large lots, with their alerts, read in
    the caller's transaction (one snapshot)."""
    blocks = list_blocks(connection=connection)
    stock = _stock(connection, blocks, now)
    payouts = _payouts(connection, blocks, now, thresholds.band_sigmas)
    large = _large_lots(connection, now, thresholds.large_lot_cents)
    alerts: list[Alert] = []
    for line in stock:
        left = line.on_sale + line.units_behind
        short = line.hours_left is not None and line.hours_left < thresholds.stock_hours
        if short or left < thresholds.stock_units:
            hours = "no sale in 24 h" if line.hours_left is None else f"{line.hours_left:.1f} h"
            alerts.append(
                Alert("low_stock", line.price_cents, f"{left} units left ({hours} at this pace)")
            )
    for p in payouts:
        if not p.band_low_bp <= p.payout_bp <= p.band_high_bp:
            alerts.append(
                Alert(
                    "payout_band",
                    p.price_cents,
                    f"payout {p.payout_bp} bp over {p.units} units, outside "
                    f"{p.band_low_bp}..{p.band_high_bp} bp",
                )
            )
    alerts.extend(
        Alert("large_lot", lot.price_cents, f"play {lot.play_id} won {lot.prize_cents} cents")
        for lot in large
    )
    return Watch(tuple(stock), tuple(payouts), tuple(large), tuple(alerts))


def _stock(connection: Connection, every: list[BlockSummary], now: datetime) -> list[StockLine]:
    blocks = [b for b in every if b.state in ("open", "loaded")]
    pace = {
        int(price): int(n)
        for price, n in connection.execute(
            select(PlayRow.stake_cents, func.count())
            .where(PlayRow.created_at >= now - DAY)
            .group_by(PlayRow.stake_cents)
        )
    }
    lines = []
    for price in sorted({b.price_cents for b in blocks} | set(pace)):
        on_sale = sum(
            b.block_size - b.sold for b in blocks if b.price_cents == price and b.state == "open"
        )
        behind = [b for b in blocks if b.price_cents == price and b.state == "loaded"]
        units_behind = sum(b.block_size - b.sold for b in behind)
        sold = int(pace.get(price, 0))
        hours = (on_sale + units_behind) * 24 / sold if sold else None
        lines.append(StockLine(price, on_sale, len(behind), units_behind, sold, hours))
    return lines


def _day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _payouts(
    connection: Connection, every: list[BlockSummary], now: datetime, sigmas: float
) -> list[PayoutLine]:
    rows = connection.execute(
        select(
            PlayRow.stake_cents,
            PlayRow.block_id,
            func.count(),
            func.sum(PlayRow.prize_cents),
        )
        .where(PlayRow.created_at >= _day_start(now))
        .group_by(PlayRow.stake_cents, PlayRow.block_id)
    ).all()
    blocks = {b.block_id: b.block_size for b in every}
    lots: dict[int, list[tuple[int, int]]] = {}
    for block_id, lot, units in connection.execute(
        select(BlockPrize.block_id, BlockPrize.lot_cents, BlockPrize.units).where(
            BlockPrize.block_id.in_({int(r[1]) for r in rows})
        )
    ):
        lots.setdefault(int(block_id), []).append((int(lot), int(units)))
    by_price: dict[int, list[tuple[int, int, int]]] = {}  # price: (block id, units, prizes)
    for price, block_id, n, prizes in rows:
        by_price.setdefault(int(price), []).append((int(block_id), int(n), int(prizes or 0)))
    out = []
    for price, parts in sorted(by_price.items()):
        units = sum(n for _, n, _ in parts)
        prizes = sum(p for _, _, p in parts)
        # The mean and variance of the day's total lot, block by block (independent draws).
        mean = variance = 0.0
        for block_id, n, _ in parts:
            size = blocks[block_id]
            m1 = sum(lot * k for lot, k in lots.get(block_id, [])) / size
            m2 = sum(lot * lot * k for lot, k in lots.get(block_id, [])) / size
            mean += n * m1
            variance += n * (m2 - m1 * m1)
        stakes = units * price
        spread = sigmas * math.sqrt(variance)
        out.append(
            PayoutLine(
                price_cents=price,
                units=units,
                stakes_cents=stakes,
                prizes_cents=prizes,
                payout_bp=prizes * 10_000 // stakes,
                planned_bp=round(mean * 10_000 / stakes),
                band_low_bp=max(0, math.floor((mean - spread) * 10_000 / stakes)),
                band_high_bp=math.ceil((mean + spread) * 10_000 / stakes),
            )
        )
    return out


def _large_lots(connection: Connection, now: datetime, at_least: int) -> list[LargeLot]:
    rows = connection.execute(
        select(
            PlayRow.id,
            PlayRow.player_id,
            PlayRow.stake_cents,
            PlayRow.prize_cents,
            PlayRow.created_at,
        )
        .where(PlayRow.created_at >= now - DAY, PlayRow.prize_cents >= at_least)
        .order_by(PlayRow.id.desc())
        .limit(100)
    )
    return [LargeLot(int(i), int(p), int(s), int(z), c) for i, p, s, z, c in rows]
