"""What the metrics read from the database (service/gauges.py), on both databases: the open
block at each price with its units sold and left, and the « Jouer » plays not fully
uncovered."""

from __future__ import annotations

import secrets

from sqlalchemy import Engine

from pharaon.game.modes import Mode
from pharaon.service import blocks, gauges, plays
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.service.stock import Thresholds
from pharaon.store.engine import make_sessionmaker
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player


def _look(db: Transactions) -> gauges.Gauges:
    return db.read(gauges.look, now=utcnow(), thresholds=Thresholds())


def _sell(engine: Engine, player_id: int, stake: int, mode: Mode, count: int) -> list[int]:
    """``count`` plays, one order at a time; their ids."""
    ids: list[int] = []
    for _ in range(count):
        [play] = buy(
            make_sessionmaker(engine), [Order(player_id, stake, mode, secrets.token_hex(8))]
        )
        assert isinstance(play, plays.PlayView), play
        ids.append(play.play_id)
    return ids


def test_nothing_loaded_nothing_to_gauge(db: Transactions) -> None:
    found = _look(db)
    assert (found.pending_reveals, found.pools, found.watch.stock) == (0, (), ())


def test_the_units_left_in_the_open_block_at_each_price(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    first = load(100, size=16)
    second = load(100, size=20, number=2)  # waits for the first to sell out
    three = load(300, size=30)
    assert _look(db).pools == (
        gauges.PoolUse(100, first, 0, 16),
        gauges.PoolUse(300, three, 0, 30),
    )
    ana = funded_player(make_sessionmaker(engine), "ana", 100_000)
    _sell(engine, ana, 100, Mode.AUTO, 5)
    _sell(engine, ana, 300, Mode.AUTO, 2)
    assert _look(db).pools == (
        gauges.PoolUse(100, first, 5, 11),
        gauges.PoolUse(300, three, 2, 28),
    )
    _sell(engine, ana, 100, Mode.AUTO, 13)  # the first block's 11, then 2 of the second
    assert _look(db).pools == (
        gauges.PoolUse(100, second, 2, 18),
        gauges.PoolUse(300, three, 2, 28),
    )
    db.write(blocks.deactivate, block_id=three, reason="test", actor="test", now=utcnow())
    assert _look(db).pools == (gauges.PoolUse(100, second, 2, 18),)


def test_jouer_plays_are_pending_until_their_fourth_grid(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    block = load(100, size=30)
    ana = funded_player(make_sessionmaker(engine), "ana", 10_000)
    _sell(engine, ana, 100, Mode.AUTO, 3)
    jouer = _sell(engine, ana, 100, Mode.JOUER, 3)
    assert db.read(gauges.pending_reveals) == 3
    db.write(
        plays.reveal,
        requests=[plays.Reveal(ana, jouer[0], g) for g in (1, 2, 3)]
        + [plays.Reveal(ana, jouer[1], g) for g in (4, 3, 2, 1)],
        now=utcnow(),
    )
    found = _look(db)
    assert (found.pending_reveals, found.pools) == (2, (gauges.PoolUse(100, block, 6, 24),))
    db.write(plays.reveal, requests=[plays.Reveal(ana, jouer[0], 4)], now=utcnow())
    assert db.read(gauges.pending_reveals) == 1
