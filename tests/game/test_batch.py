"""The batch evaluator must say exactly what the one-unit evaluator says."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pharaon.game.batch import evaluate_batch
from pharaon.game.board import BONUS_CELLS, LINES, TETROMINOES
from pharaon.game.evaluate import MalformedUnitError, evaluate
from pharaon.game.unit import Unit, parse_ticket
from tests.game.helpers import BACKGROUND

STAKES = st.sampled_from([100, 200, 300])


def _check_agrees(cells: list[int], stake: int) -> None:
    units = np.array([cells], dtype=np.int8)
    got = evaluate_batch(units, stake)
    try:
        want = evaluate(Unit(tuple(cells)), stake)
    except MalformedUnitError:
        assert bool(got.malformed[0])
        assert got.lots_cents[0] == 0
        return
    assert not got.malformed[0]
    assert got.lots_cents[0] == want.prize_cents
    assert got.combinations[0] == len(want.combinations)
    lines = [0] * 6
    bonus = [0] * 6
    for c in want.combinations:
        index = "PYOXJS".index(c.symbol)
        (lines if c.kind == "line" else bonus)[index] += 1
    assert got.line_counts[0].tolist() == lines
    assert got.bonus_counts[0, :5].tolist() == bonus[:5]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=64, max_size=64), STAKES)
def test_random_units(cells: list[int], stake: int) -> None:
    _check_agrees(cells, stake)


@st.composite
def adversarial(draw: st.DrawFn) -> list[int]:
    """Few symbols, planted lines and tetrominoes: many wins, big groups, crossings."""
    alphabet = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
    cells = draw(st.lists(st.sampled_from(alphabet), min_size=64, max_size=64))
    for line in draw(st.lists(st.sampled_from(LINES), max_size=4)):
        symbol = draw(st.integers(0, 5))
        for i in line.cells:
            cells[i] = symbol
    for placement in draw(st.lists(st.sampled_from(TETROMINOES), max_size=3)):
        symbol = draw(st.integers(0, 5))
        for p in placement.positions:
            cells[BONUS_CELLS[p]] = symbol
    return cells


@settings(max_examples=600, deadline=None)
@given(adversarial(), STAKES)
def test_adversarial_units(cells: list[int], stake: int) -> None:
    _check_agrees(cells, stake)


def test_a_large_random_batch_agrees_unit_by_unit() -> None:
    rng = np.random.default_rng(2026)
    units = rng.integers(0, 6, size=(3_000, 64), dtype=np.int8)
    got = evaluate_batch(units, 200)
    for i in range(len(units)):
        try:
            want = evaluate(Unit.from_array(units[i]), 200).prize_cents
            assert not got.malformed[i]
        except MalformedUnitError:
            want = 0
            assert got.malformed[i]
        assert got.lots_cents[i] == want
    assert got.malformed.any()
    assert (got.lots_cents > 0).any()


def test_cells_outside_the_six_symbols_are_malformed() -> None:
    base = parse_ticket(BACKGROUND).to_array()
    units = np.stack([base] * 4)
    units[1, 7] = 6
    units[2, 40] = -1
    units[3, 63] = 100
    got = evaluate_batch(units)
    assert got.malformed.tolist() == [False, True, True, True]
    assert got.lots_cents.tolist() == [0, 0, 0, 0]


def test_shape_and_dtype_are_checked() -> None:
    with pytest.raises(ValueError, match=r"shape \(n, 64\)"):
        evaluate_batch(np.zeros((2, 63), dtype=np.int8))
    with pytest.raises(ValueError, match="must be int8, got int64"):
        evaluate_batch(np.zeros((2, 64), dtype=np.int64))


def test_an_empty_batch() -> None:
    got = evaluate_batch(np.zeros((0, 64), dtype=np.int8))
    assert got.lots_cents.shape == (0,)


def test_threads_give_the_same_result() -> None:
    rng = np.random.default_rng(5)
    units = rng.integers(0, 6, size=(200_001, 64), dtype=np.int8)
    one, two = evaluate_batch(units, 200), evaluate_batch(units, 200, threads=3)
    for name in ("lots_cents", "combinations", "malformed", "line_counts", "bonus_counts"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
