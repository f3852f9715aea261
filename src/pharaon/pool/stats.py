"""What a block looks like from outside: which cells win, symbol frequencies of the others,
the near-miss measures of losing against winning units, the order tests of where the winners
fall. Shared by the report, the auditor's approval and the fairness tests.

Everything works on the units' columns (one cell of every unit at a time) and 64-bit masks of
cells, so that a whole block of 1,000,000 units is measured in about a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.batch import SYMBOLS
from pharaon.game.board import BONUS_CELLS, GRID_CELLS, UNIT_CELLS, bonus_neighbours
from pharaon.game.rules import rules
from pharaon.game.tables import group_cells_table, spread, three_table
from pharaon.pool.layout import LINE_CELLS, LOOK_SYMBOLS

MASKS: Final = 1 << GRID_CELLS
_LINE_MASKS: Final = np.array(
    [sum(1 << int(c) for c in line) for line in LINE_CELLS], dtype=np.uint64
).view(np.int64)
"""(40,) int64: each line's cells as a 64-bit mask (cell 63 is the sign bit)."""
_BONUS_PAIRS: Final = tuple((p, q) for p in range(GRID_CELLS) for q in bonus_neighbours(p) if q > p)
"""The 24 pairs of bonus positions in contact."""


BONUS: Final = np.array(BONUS_CELLS, dtype=np.int64)
CELL_CLASSES: Final = ("bonus", "outside")
"""Cells of the bonus grid (16) and the others (48): they meet different rules."""
_IS_BONUS: Final = np.isin(np.arange(UNIT_CELLS), BONUS)


def _columns(units: NDArray[np.int8]) -> NDArray[np.int8]:
    """(64, n) int8: the units cell by cell (each row contiguous)."""
    return np.ascontiguousarray(units.T)


def _bonus_masks(columns: NDArray[np.int8]) -> NDArray[np.int64]:
    """(6, n) int64: each symbol's 16-bit mask of the bonus grid, unit by unit."""
    out = np.zeros((SYMBOLS, columns.shape[1]), dtype=np.int64)
    for p, c in enumerate(BONUS_CELLS):
        for s in range(SYMBOLS):
            out[s] |= (columns[c] == s).astype(np.int64) << p
    return out


def _winning_masks(columns: NDArray[np.int8], bonus: NDArray[np.int64]) -> NDArray[np.int64]:
    """(n,) int64: bit c set where cell c is part of a winning line or a paying bonus group
    (``bonus``: :func:`_bonus_masks`)."""
    out = np.zeros(columns.shape[1], dtype=np.int64)
    for line, (a, b, c, d) in enumerate(LINE_CELLS):
        full = (columns[a] == columns[b]) & (columns[b] == columns[c]) & (columns[c] == columns[d])
        out |= np.where(full, _LINE_MASKS[line], 0)
    table = group_cells_table()
    grouped = np.zeros(columns.shape[1], dtype=np.int64)
    for s, symbol in enumerate(rules().symbols):
        if symbol.bonus_cents is not None:
            grouped |= table[bonus[s]]
    for p, c in enumerate(BONUS_CELLS):
        out |= ((grouped >> p) & 1) << c
    return out


def _unpack(masks: NDArray[np.int64]) -> NDArray[np.bool_]:
    """(n, 64) bool of (n,) 64-bit masks (bit c: column c)."""
    as_bytes = np.ascontiguousarray(masks, dtype=np.int64).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little").view(np.bool_)


def winning_cells(units: NDArray[np.int8]) -> NDArray[np.bool_]:
    """(n, 64) bool: cells that are part of a winning line or a paying bonus group."""
    columns = _columns(units)
    return _unpack(_winning_masks(columns, _bonus_masks(columns)))


def free_symbol_counts(units: NDArray[np.int8], winning: NDArray[np.bool_]) -> NDArray[np.int64]:
    """(2, 2, 6) int64: counts of symbols in cells outside every winning combination, by
    [losing 0 / winning 1 units][cell class: bonus 0 / outside 1][symbol]."""
    free = ~winning_cells(units)
    out = np.zeros((2, 2, SYMBOLS), dtype=np.int64)
    for w in (0, 1):
        rows = winning == bool(w)
        for k, where in enumerate((_IS_BONUS, ~_IS_BONUS)):
            values = units[rows][:, where][free[rows][:, where]]
            out[w, k] = np.bincount(values, minlength=SYMBOLS)
    return out


# --- What an auditor reads of a whole block (report, console, approval) -------------------------

LOOK_ALIKE_GAP_PP: Final = 1.0
"""Largest gap, in percentage points, allowed between losing and winning units on a measure."""
ORDER_LEVEL: Final = 0.01
"""The order tests together say the winners fall in a pattern along the sale order when one
p-value is below this level shared among them (so a fair block passes 99 times in 100)."""
ORDER_LAGS: Final = (1, 2, 3, 5, 10)
ORDER_TESTS: Final = 1 + 2 * len(ORDER_LAGS)


@dataclass(frozen=True, slots=True)
class Measure:
    """One near-miss measure in percent of losing and of winning units (or of their cells)."""

    name: str
    label: str
    losing_pct: float
    winning_pct: float

    @property
    def gap_pp(self) -> float:
        return abs(self.losing_pct - self.winning_pct)

    @property
    def alike(self) -> bool:
        return self.gap_pp <= LOOK_ALIKE_GAP_PP


@dataclass(frozen=True, slots=True)
class OrderTest:
    """A test that the winners fall at random along the sale order: its two-sided p-value."""

    name: str
    label: str
    p_value: float

    @property
    def passed(self) -> bool:
        # ORDER_LEVEL is for the tests together (Bonferroni): each gets its share of it
        return self.p_value > ORDER_LEVEL / ORDER_TESTS


@dataclass(frozen=True, slots=True)
class Fairness:
    measures: tuple[Measure, ...]
    order: tuple[OrderTest, ...]

    @property
    def alike(self) -> bool:
        """Every near-miss measure within :data:`LOOK_ALIKE_GAP_PP`: what the generator's
        design guarantees (docs/block-format.md)."""
        return all(m.alike for m in self.measures)

    @property
    def ok(self) -> bool:
        """Alike, and every order test passed (a fair block fails them one time in a
        hundred: they inform an auditor's judgement, they do not refuse a block)."""
        return self.alike and all(t.passed for t in self.order)

    def as_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "alike": self.alike,
            "gap_limit_pp": LOOK_ALIKE_GAP_PP,
            "order_level": ORDER_LEVEL,
            "order_test_level": ORDER_LEVEL / ORDER_TESTS,
            "measures": [
                {
                    "name": m.name,
                    "label": m.label,
                    "losing_pct": round(m.losing_pct, 3),
                    "winning_pct": round(m.winning_pct, 3),
                    "gap_pp": round(m.gap_pp, 3),
                    "alike": m.alike,
                }
                for m in self.measures
            ],
            "order": [
                {"name": t.name, "label": t.label, "p_value": t.p_value, "passed": t.passed}
                for t in self.order
            ],
        }


def fairness(units: NDArray[np.int8], lots_cents: NDArray[np.int64]) -> Fairness:
    """The near-miss measures of losing against winning units and the order tests of the
    winners, for a block's units in the order of sale."""
    winning = lots_cents > 0
    return Fairness(measures=look_alike(units, winning), order=order_tests(winning, lots_cents))


def look_alike(units: NDArray[np.int8], winning: NDArray[np.bool_]) -> tuple[Measure, ...]:
    """The near-miss measures, losing against winning units, each on what the winning
    combinations leave free (a cell of a winning line holds its symbol, a cell touching a
    winning group cannot hold the group's, by the rules: neither says more than the
    combination a player sees). docs/proofs.md defines each."""
    columns = _columns(units)
    bonus = _bonus_masks(columns)
    won = _winning_masks(columns, bonus)
    out = [
        _line_three(columns, won, winning),
        _bonus_three(bonus, winning),
        _contact(columns, won, winning),
    ]
    free = _unpack(~won)
    codes = rules().symbol_codes
    for g in range(4):
        cells = slice(GRID_CELLS * g, GRID_CELLS * (g + 1))
        counts = [
            np.bincount(units[rows, cells][free[rows, cells]], minlength=SYMBOLS)
            for rows in (~winning, winning)
        ]
        for s, code in enumerate(codes):
            losing, won_pct = (100.0 * float(c[s]) / max(1, int(c.sum())) for c in counts)
            out.append(
                Measure(
                    f"symbols_grid{g + 1}_{code}",
                    f"{code} among grid {g + 1}'s cells outside winning combinations",
                    losing,
                    won_pct,
                )
            )
    return tuple(out)


def _shares(
    hits: NDArray[np.int64], counted: NDArray[np.int64], winning: NDArray[np.bool_]
) -> tuple[float, float]:
    """(losing %, winning %): ``hits`` summed over ``counted`` summed, per class."""
    losing, won = (
        100.0 * float(hits[rows].sum()) / max(1, int(counted[rows].sum()))
        for rows in (~winning, winning)
    )
    return losing, won


def _line_three(
    columns: NDArray[np.int8], won: NDArray[np.int64], winning: NDArray[np.bool_]
) -> Measure:
    """Three of a kind on a line: of the lines that share no cell with a winning combination,
    the share holding exactly three of one symbol (of a line's six pairs of cells, exactly
    three hold one symbol: three alike and one other)."""
    n = columns.shape[1]
    hits = np.zeros(n, dtype=np.int64)
    counted = np.zeros(n, dtype=np.int64)
    for line, cells in enumerate(LINE_CELLS):
        away = (won & _LINE_MASKS[line]) == 0
        c = [columns[x] for x in cells]
        alike = sum((c[i] == c[j]).astype(np.int8) for i in range(4) for j in range(i + 1, 4))
        counted += away
        hits += away & (alike == 3)
    losing, won_pct = _shares(hits, counted, winning)
    return Measure(
        "line_three",
        "lines away from winning combinations holding exactly three of one symbol",
        losing,
        won_pct,
    )


def _bonus_three(bonus: NDArray[np.int64], winning: NDArray[np.bool_]) -> Measure:
    """Three in contact: the share of units whose bonus grid shows a group of exactly three
    cells of one symbol, the scarab aside (the look of pharaon.pool.layout)."""
    shows = _shows_three(bonus).astype(np.int64)
    losing, won = _shares(shows, np.ones_like(shows), winning)
    return Measure(
        "bonus_three",
        "units showing three same-symbol cells in contact in the bonus grid (scarab aside)",
        losing,
        won,
    )


def _shows_three(bonus: NDArray[np.int64]) -> NDArray[np.bool_]:
    table = three_table()
    shows = np.zeros(bonus.shape[1], dtype=np.bool_)
    for s in range(SYMBOLS):
        if (LOOK_SYMBOLS >> s) & 1:
            shows |= table[bonus[s]]
    return shows


def shows_three(units: NDArray[np.int8]) -> NDArray[np.bool_]:
    """(n,) bool: whether each unit's bonus grid shows a group of exactly three cells of one
    symbol, the scarab aside (the look of pharaon.pool.layout)."""
    return _shows_three(_bonus_masks(_columns(units)))


def _contact(
    columns: NDArray[np.int8], won: NDArray[np.int64], winning: NDArray[np.bool_]
) -> Measure:
    """Cells in contact: of the pairs of bonus cells in contact, both away from winning
    combinations (not in one, not touching one), the share holding one symbol."""
    won_bonus = np.zeros(columns.shape[1], dtype=np.int64)
    for p, c in enumerate(BONUS_CELLS):
        won_bonus |= ((won >> c) & 1) << p
    away = ~spread(won_bonus)
    same = np.zeros(columns.shape[1], dtype=np.int64)
    pairs = np.zeros(columns.shape[1], dtype=np.int64)
    for p, q in _BONUS_PAIRS:
        both = (away >> p) & (away >> q) & 1
        pairs += both
        same += both & (columns[BONUS_CELLS[p]] == columns[BONUS_CELLS[q]])
    losing, won_pct = _shares(same, pairs, winning)
    return Measure(
        "contact",
        "pairs of bonus cells in contact, away from winning combinations, holding one symbol",
        losing,
        won_pct,
    )


def norm_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def runs_p(x: NDArray[np.bool_]) -> float:
    """Wald–Wolfowitz runs test: the two-sided p-value of the number of runs of ``x``."""
    n1 = int(x.sum())
    n0 = x.size - n1
    if n1 == 0 or n0 == 0:
        return 1.0
    runs = 1 + int(np.count_nonzero(x[1:] != x[:-1]))
    mean = 1 + 2 * n1 * n0 / x.size
    var = 2 * n1 * n0 * (2 * n1 * n0 - x.size) / (x.size**2 * (x.size - 1))
    return 2 * norm_sf(abs(runs - mean) / math.sqrt(var))


def serial_correlation_p(x: NDArray[np.float64], lag: int) -> float:
    """Two-sided p-value of the lag-``lag`` autocorrelation of ``x`` (normal approximation)."""
    y = x - x.mean()
    total = float((y * y).sum())
    if total == 0.0 or lag >= x.size:
        return 1.0
    r = float((y[:-lag] * y[lag:]).sum()) / total
    return 2 * norm_sf(abs(r) * math.sqrt(x.size))


def order_tests(winning: NDArray[np.bool_], lots_cents: NDArray[np.int64]) -> tuple[OrderTest, ...]:
    """Whether the winners fall at random along the sale order: the runs test of winning
    against losing, and the serial correlation of winning and of log(1 + lot) at
    :data:`ORDER_LAGS`."""
    won = winning.astype(np.float64)
    lots = np.log1p(lots_cents.astype(np.float64))
    out = [OrderTest("runs", "runs of winning and losing units (Wald-Wolfowitz)", runs_p(winning))]
    for lag in ORDER_LAGS:
        out.append(
            OrderTest(f"serial_win_{lag}", f"serial correlation of winning, lag {lag}",
                      serial_correlation_p(won, lag))
        )  # fmt: skip
    for lag in ORDER_LAGS:
        out.append(
            OrderTest(f"serial_lot_{lag}", f"serial correlation of log(1 + lot), lag {lag}",
                      serial_correlation_p(lots, lag))
        )  # fmt: skip
    return tuple(out)
