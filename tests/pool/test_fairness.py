"""Statistical tests at the 99 % level: nobody can locate winners by their position in the
sale order, nor tell winning from losing units by the symbols outside winning combinations,
nor by a near-miss (pharaon.pool.stats.look_alike: each measure within one point).

Blocks come from fixed keys, so each test gives the same answer every run; a biased generator
fails them (see the control tests, which run the same statistics on a block made biased)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from pharaon.pool.blockfile import Block, read_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.layout import Plan, lay_out
from pharaon.pool.stats import (
    LOOK_ALIKE_GAP_PP,
    fairness,
    free_symbol_counts,
    look_alike,
    norm_sf,
    runs_p,
    serial_correlation_p,
)
from pharaon.pool.streams import KeyStream
from tests.conftest import OPERATOR, VENDOR

LEVEL = 0.01  # reject "no pattern" below this p-value: a 99 % test
LAGS = (1, 2, 3, 5, 10)


def chi2_sf(x: float, df: int) -> float:
    """P(X > x) for a chi-square X with ``df`` (whole) degrees of freedom: the closed forms of
    the regularized upper incomplete gamma function Q(df/2, x/2). (SciPy has it, but installed,
    SciPy is imported by numba in every process: 0.1-0.3 s of each `pharaon` command.)"""
    y = x / 2
    if df % 2 == 0:
        term = total = 1.0
        for j in range(1, df // 2):
            term *= y / j
            total += term
        return math.exp(-y) * total
    total, term = 0.0, math.sqrt(y) / math.gamma(1.5)
    for j in range(1, (df - 1) // 2 + 1):
        total += term
        term *= y / (j + 0.5)
    return math.erfc(math.sqrt(y)) + math.exp(-y) * total


def chi_square_p(counts: NDArray[np.int64]) -> float:
    """p-value of Pearson's test of independence on a contingency table (here 2 × 6:
    losing/winning × symbol)."""
    expected = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / counts.sum()
    statistic = float(((counts - expected) ** 2 / expected).sum())
    df = (counts.shape[0] - 1) * (counts.shape[1] - 1)
    return chi2_sf(statistic, df)


@pytest.mark.parametrize(
    ("x", "df", "p"),
    [  # critical values from the usual tables, and closed forms
        (3.841459, 1, 0.05),
        (9.210340, 2, 0.01),
        (11.070498, 5, 0.05),
        (15.086272, 5, 0.01),
        (18.307038, 10, 0.05),
        (0.0, 5, 1.0),
        (2.0, 2, math.exp(-1)),
    ],
)
def test_the_chi_square_tail(x: float, df: int, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, rel=1e-6)


def test_the_normal_tail_and_a_known_table() -> None:
    assert norm_sf(0.0) == 0.5
    assert 2 * norm_sf(1.959964) == pytest.approx(0.05, rel=1e-6)
    # A 2 × 6 table: statistic 4 × 25 / 10 = 10 on 5 degrees of freedom; the p-value is what
    # SciPy 1.17's chi2_contingency gave for it.
    counts = np.array([[5, 15, 10, 10, 10, 10], [15, 5, 10, 10, 10, 10]], dtype=np.int64)
    assert chi_square_p(counts) == pytest.approx(0.07523524614651217, rel=1e-9)


@pytest.fixture(scope="module")
def medium_block() -> Block:
    return generate_block(
        100, design=test_design(100_000), vendor_key=VENDOR, operator_key=OPERATOR
    )


def _check_order(block: Block) -> None:
    winning = block.lots_cents > 0
    assert runs_p(winning) > LEVEL
    for lag in LAGS:
        assert serial_correlation_p(winning.astype(np.float64), lag) > LEVEL, lag
        lots = np.log1p(block.lots_cents.astype(np.float64))
        assert serial_correlation_p(lots, lag) > LEVEL, lag


def _check_symbols(block: Block) -> None:
    counts = free_symbol_counts(block.units, block.lots_cents > 0)
    for k in range(2):
        assert chi_square_p(counts[:, k]) > LEVEL, (k, counts[:, k])


def test_winners_spread_along_the_sale_order(medium_block: Block) -> None:
    _check_order(medium_block)


def test_background_symbols_do_not_tell_winners(medium_block: Block) -> None:
    _check_symbols(medium_block)


def test_control_the_order_tests_catch_winners_bunched(medium_block: Block) -> None:
    winning = np.sort(medium_block.lots_cents > 0)  # losing first, then winners
    assert runs_p(winning) < LEVEL
    assert serial_correlation_p(winning.astype(np.float64), 1) < LEVEL
    cycle = np.zeros(100_000, dtype=np.bool_)
    cycle[::4] = True  # every fourth unit wins: few runs are missing, yet a pattern
    assert serial_correlation_p(cycle.astype(np.float64), 4) < LEVEL


def test_control_the_symbol_test_catches_an_unbalanced_fill() -> None:
    # The layout alone, without the balancing step, leaves a visible trace.
    stream = KeyStream(bytes([3]) * 32)  # a fixed key: a reproducible test
    plans = [Plan((), ()), Plan((), (0, 1)), Plan((4,), (0,))]  # losing, P+Y bonus, J line+P
    kinds = np.repeat(np.arange(3), [60_000, 20_000, 20_000])
    units = lay_out(plans, kinds, layout_stream=stream, fill_stream=stream).units
    counts = free_symbol_counts(units, kinds > 0)
    assert chi_square_p(counts[:, 0]) < LEVEL


def test_losing_and_winning_units_look_alike(medium_block: Block) -> None:
    measures = look_alike(medium_block.units, medium_block.lots_cents > 0)
    assert len(measures) == 3 + 4 * 6
    for m in measures:
        assert m.gap_pp <= LOOK_ALIKE_GAP_PP, m
    shares = {m.name: m for m in measures}
    assert 44 < shares["bonus_three"].winning_pct < 47  # the look: the losing units' 45.6 %


def test_control_without_its_look_the_layout_tells_winners() -> None:
    # The layout alone (no look given): three in contact shows on losers far more often.
    stream = KeyStream(bytes([4]) * 32)  # a fixed key: a reproducible test
    plans = [Plan((), ()), Plan((), (0,)), Plan((4,), (2, 1))]  # losing, P group, J line + O Y
    kinds = np.repeat(np.arange(3), [30_000, 15_000, 15_000])
    units = lay_out(plans, kinds, layout_stream=stream, fill_stream=stream).units
    shares = {m.name: m for m in look_alike(units, kinds > 0)}
    assert shares["bonus_three"].gap_pp > 5 * LOOK_ALIKE_GAP_PP


@pytest.mark.slow
def test_real_blocks_are_fair(real_blocks: dict[int, Path]) -> None:
    for path in real_blocks.values():
        block = read_block(path)
        _check_order(block)
        _check_symbols(block)
        judged = fairness(block.units, block.lots_cents)
        assert judged.ok, [m for m in judged.measures if not m.alike]
