"""The operator's watch (service/stock.py), on both databases: the stock per price and the hours
it lasts, the day's payout against its band, the large lots, and the alerts they raise."""

from __future__ import annotations

import math
import secrets
from datetime import timedelta

import numpy as np
from sqlalchemy import Engine

from pharaon.game.modes import Mode
from pharaon.service import plays, stock
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader, make_block
from tests.service.helpers import buy, funded_player

QUIET = stock.Thresholds(stock_hours=0, stock_units=0, band_sigmas=1e9, large_lot_cents=10**12)


def _sell(engine: Engine, player_id: int, stake: int, count: int) -> list[plays.PlayView]:
    sold = []
    for _ in range(count):
        [play] = buy(
            make_sessionmaker(engine), [Order(player_id, stake, Mode.AUTO, secrets.token_hex(8))]
        )
        assert isinstance(play, plays.PlayView), play
        sold.append(play)
    return sold


def test_the_stock_per_price_and_the_hours_it_lasts(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=16)
    load(100, size=20, number=2)  # behind the first
    load(300, size=30)
    ana = funded_player(make_sessionmaker(engine), "ana", 100_000)
    _sell(engine, ana, 100, 5)
    found = db.read(stock.watch, now=utcnow(), thresholds=QUIET)
    assert found.stock == (
        stock.StockLine(100, 11, 1, 20, 5, (11 + 20) * 24 / 5),
        stock.StockLine(300, 30, 0, 0, 0, None),
    )
    assert found.alerts == ()
    # Under 200 hours of stock at 1 €, under 31 units at 3 €.
    short = stock.Thresholds(
        stock_hours=200, stock_units=31, band_sigmas=1e9, large_lot_cents=10**12
    )
    alerts = db.read(stock.watch, now=utcnow(), thresholds=short).alerts
    assert [(a.kind, a.price_cents) for a in alerts] == [("low_stock", 100), ("low_stock", 300)]
    assert alerts[0].detail == "31 units left (148.8 h at this pace)"
    assert alerts[1].detail == "30 units left (no sale in 24 h at this pace)"
    # A day later, the last 24 hours sold nothing.
    later = db.read(stock.watch, now=utcnow() + timedelta(hours=25), thresholds=QUIET)
    assert [line.sold_last_day for line in later.stock] == [0, 0]
    assert later.payouts == ()


def test_the_day_s_payout_and_its_band(engine: Engine, db: Transactions, load: BlockLoader) -> None:
    size = 200
    load(200, size=size)
    lots = make_block(200, size=size).lots_cents.astype(np.float64)  # the same block, again
    ana = funded_player(make_sessionmaker(engine), "ana", 1_000_000)
    sold = _sell(engine, ana, 200, 40)
    [line] = db.read(stock.watch, now=utcnow(), thresholds=stock.Thresholds(band_sigmas=3)).payouts
    prizes = sum(p.prize_cents or 0 for p in sold)
    assert (line.price_cents, line.units, line.stakes_cents) == (200, 40, 8_000)
    assert (line.prizes_cents, line.payout_bp) == (prizes, prizes * 10_000 // 8_000)
    # The band, from the block's own lots: mean and variance of 40 draws, ± 3 sigmas.
    mean, spread = 40 * lots.mean(), 3 * math.sqrt(40 * lots.var())
    assert line.planned_bp == round(mean * 10_000 / 8_000)
    assert line.band_low_bp == max(0, math.floor((mean - spread) * 10_000 / 8_000))
    assert line.band_high_bp == math.ceil((mean + spread) * 10_000 / 8_000)
    assert line.band_low_bp <= line.planned_bp <= line.band_high_bp
    # A band of no width: any payout but the planned one is an alert.
    narrow = stock.Thresholds(stock_hours=0, stock_units=0, band_sigmas=0, large_lot_cents=10**12)
    alerts = db.read(stock.watch, now=utcnow(), thresholds=narrow).alerts
    outside = not line.planned_bp - 1 <= line.payout_bp <= line.planned_bp
    assert [a.kind for a in alerts] == (["payout_band"] if outside else [])
    # The whole block sold: the payout is the planned one, inside any band.
    _sell(engine, ana, 200, size - 40)
    [whole] = db.read(stock.watch, now=utcnow(), thresholds=QUIET).payouts
    assert abs(whole.payout_bp - whole.planned_bp) <= 1


def test_every_lot_over_the_threshold_is_an_alert(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=200)
    ana = funded_player(make_sessionmaker(engine), "ana", 100_000)
    sold = _sell(engine, ana, 100, 60)
    won = [p for p in sold if (p.prize_cents or 0) >= 500]
    assert won, "no lot of 5 € in 60 units"
    thresholds = stock.Thresholds(
        stock_hours=0, stock_units=0, band_sigmas=1e9, large_lot_cents=500
    )
    found = db.read(stock.watch, now=utcnow(), thresholds=thresholds)
    assert sorted(lot.play_id for lot in found.large_lots) == sorted(p.play_id for p in won)
    assert {lot.player_id for lot in found.large_lots} == {ana}
    assert [a.kind for a in found.alerts] == ["large_lot"] * len(won)
    later = db.read(stock.watch, now=utcnow() + timedelta(hours=25), thresholds=thresholds)
    assert later.large_lots == ()
