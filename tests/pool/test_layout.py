from __future__ import annotations

import numpy as np
import pytest

from pharaon.game.batch import evaluate_batch
from pharaon.pool.balance import balance
from pharaon.pool.layout import LOOK_THREE_SHARE, LayoutError, Plan, lay_out, looks
from pharaon.pool.stats import shows_three, winning_cells
from pharaon.pool.streams import KeyStream

# P Y O X J S = 0..5
PLANS = [
    Plan((), ()),
    Plan((4, 4, 4, 4), (0, 0)),  # 4 J lines + 2 P bonus groups
    Plan((3, 4, 4, 4, 4), ()),
    Plan((4, 4, 4), (2, 1)),
    Plan((5,), (0,)),
]


def test_every_unit_holds_exactly_its_plan() -> None:
    stream = KeyStream(bytes([7]) * 32)  # a fixed key: a reproducible test
    kinds = np.repeat(np.arange(len(PLANS)), 400)
    laid = lay_out(PLANS, kinds, layout_stream=stream, fill_stream=stream)
    units, planned = laid.units, laid.planned_cells()
    result = evaluate_batch(units)
    assert not result.malformed.any()
    for k, plan in enumerate(PLANS):
        rows = kinds == k
        assert (result.line_counts[rows] == plan.line_counts()).all()
        assert (result.bonus_counts[rows] == plan.bonus_counts()).all()
    assert np.array_equal(planned, winning_cells(units))


def test_every_unit_shows_the_look_it_was_given_and_keeps_it_through_the_balancing() -> None:
    stream = KeyStream(bytes([9]) * 32)  # a fixed key: a reproducible test
    kinds = np.repeat(np.arange(len(PLANS)), 600)
    look = looks(stream.substream(99), kinds.size)
    assert abs(look.mean() - LOOK_THREE_SHARE) < 0.03
    laid = lay_out(PLANS, kinds, layout_stream=stream, fill_stream=stream, look=look)
    assert np.array_equal(shows_three(laid.units), look == 1)
    before = laid.units.copy()
    balance(laid, winning=kinds > 0, stream=stream.substream(98))
    assert (laid.units != before).any()  # the balancing did change cells
    assert np.array_equal(shows_three(laid.units), look == 1)
    result = evaluate_batch(laid.units)
    for k, plan in enumerate(PLANS):
        assert (result.line_counts[kinds == k] == plan.line_counts()).all()


def test_places_are_drawn_at_random() -> None:
    stream = KeyStream(bytes([8]) * 32)  # a fixed key: a reproducible test
    laid = lay_out(
        [Plan((4,), ())], np.zeros(4000, dtype=np.int64), layout_stream=stream, fill_stream=stream
    )
    units, planned = laid.units, laid.planned_cells()
    # Each of the 40 lines carries the J line about 100 times.
    from pharaon.pool.layout import LINE_CELLS

    where = planned[:, LINE_CELLS].all(axis=2).argmax(axis=1)
    counts = np.bincount(where, minlength=40)
    assert counts.min() > 50
    assert counts.max() < 160
    assert units.shape == (4000, 64)


def test_an_impossible_plan_fails_cleanly() -> None:
    stream = KeyStream(bytes([9]) * 32)  # a fixed key: a reproducible test
    with pytest.raises(LayoutError):
        lay_out([Plan((), (0, 0, 0))], np.zeros(4, dtype=np.int64), layout_stream=stream,
                fill_stream=stream, max_attempts=50)  # fmt: skip


def test_random_chunks_stand_for_symbols_exactly_uniformly() -> None:
    from pharaon.pool._kernels import BYTE_SYMBOL, PAIR_SYMBOLS

    pairs = PAIR_SYMBOLS[PAIR_SYMBOLS != 0xFFFF]
    first, second = pairs & 0xFF, pairs >> 8
    counts = np.bincount(first.astype(np.int64) * 6 + second, minlength=36)
    assert counts.tolist() == [1820] * 36  # every ordered pair of symbols equally often
    assert (PAIR_SYMBOLS == 0xFFFF).sum() == 16
    assert np.bincount(BYTE_SYMBOL[BYTE_SYMBOL >= 0]).tolist() == [42] * 6


def test_a_crowded_plan_still_gets_every_place() -> None:
    # Four J lines in a unit: later lines often find their first draws taken and are drawn
    # among the free places; every one of the 40 lines must still carry J lines.
    stream = KeyStream(bytes([10]) * 32)  # a fixed key: a reproducible test
    laid = lay_out([Plan((4, 4, 4, 4), ())], np.zeros(2000, dtype=np.int64), layout_stream=stream,
                   fill_stream=stream)  # fmt: skip
    from pharaon.pool.layout import LINE_CELLS

    full = laid.planned_cells()[:, LINE_CELLS].all(axis=2)  # (n, 40)
    assert (full.sum(axis=1) == 4).all()
    counts = full.sum(axis=0)
    assert counts.min() > 100  # 200 expected each


def test_the_losing_units_line_test_agrees_with_the_evaluator() -> None:
    from pharaon.pool._kernels import _any_line

    rng = np.random.default_rng(11)
    units = rng.integers(0, 6, size=(3_000, 64), dtype=np.int8)
    units[:500, :16] = rng.integers(0, 2, size=(500, 16))  # grid 1 of two symbols: many lines
    lines = evaluate_batch(units).line_counts.sum(axis=1)
    found = [_any_line(u.view(np.int64)) for u in units]
    assert found == (lines > 0).tolist()
    assert 0 < sum(found) < len(found)
