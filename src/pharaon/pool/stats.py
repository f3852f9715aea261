"""What a block looks like from outside: which cells win, symbol frequencies of the others,
near-misses, where the winners fall. Shared by the report and the fairness tests."""

from __future__ import annotations

from functools import cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.batch import SYMBOLS
from pharaon.game.board import BONUS_CELLS, GRID_CELLS, UNIT_CELLS, bonus_neighbours
from pharaon.game.rules import rules
from pharaon.pool.layout import LINE_CELLS

MASKS: Final = 1 << GRID_CELLS
_NEIGHBOUR_MASKS: Final = np.array(
    [sum(1 << q for q in bonus_neighbours(p)) for p in range(GRID_CELLS)], dtype=np.int64
)


def _spread(m: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each 16-bit bonus mask grown by one step of horizontal and vertical contact."""
    grown = m.copy()
    for p in range(GRID_CELLS):
        grown |= np.where((m >> p) & 1, _NEIGHBOUR_MASKS[p], 0)
    return grown


BONUS: Final = np.array(BONUS_CELLS, dtype=np.int64)
CELL_CLASSES: Final = ("bonus", "outside")
"""Cells of the bonus grid (16) and the others (48): they meet different rules."""
_IS_BONUS: Final = np.isin(np.arange(UNIT_CELLS), BONUS)


@cache
def _group_cells_table() -> NDArray[np.uint16]:
    """(65536,) uint16: of a 16-bit bonus mask, the cells in connected groups of exactly 4."""
    remaining = np.arange(MASKS, dtype=np.int64)
    out = np.zeros(MASKS, dtype=np.int64)
    while remaining.any():
        group = remaining & -remaining
        for _ in range(15):
            group = _spread(group) & remaining
        out |= np.where(np.bitwise_count(group) == 4, group, 0)
        remaining &= ~group
    return out.astype(np.uint16)


def winning_cells(units: NDArray[np.int8]) -> NDArray[np.bool_]:
    """(n, 64) bool: cells that are part of a winning line or a paying bonus group."""
    n = units.shape[0]
    out = np.zeros((n, UNIT_CELLS), dtype=np.bool_)
    cells = units[:, LINE_CELLS]  # (n, 40, 4)
    full = (cells == cells[:, :, :1]).all(axis=2)  # (n, 40)
    for line in range(LINE_CELLS.shape[0]):
        out[:, LINE_CELLS[line]] |= full[:, line : line + 1]
    bonus = units[:, BONUS]  # (n, 16)
    weights = (1 << np.arange(16)).astype(np.int64)
    table = _group_cells_table()
    for s, symbol in enumerate(rules().symbols):
        if symbol.bonus_cents is None:
            continue
        mask = ((bonus == s) * weights).sum(axis=1)
        grouped = table[mask].astype(np.int64)
        in_group = ((grouped[:, None] >> np.arange(16)) & 1).astype(np.bool_)
        out[:, BONUS] |= in_group
    return out


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


def near_misses(units: NDArray[np.int8]) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per unit: a line with exactly three of a kind; three same-symbol bonus cells in contact
    (a connected group of exactly 3). Both (n,) bool."""
    cells = units[:, LINE_CELLS]
    three = np.zeros(units.shape[0], dtype=np.bool_)
    for s in range(SYMBOLS):
        three |= ((cells == s).sum(axis=2) == 3).any(axis=1)
    bonus = units[:, BONUS]
    weights = (1 << np.arange(16)).astype(np.int64)
    table = _three_table()
    contact = np.zeros(units.shape[0], dtype=np.bool_)
    for s in range(SYMBOLS):
        contact |= table[((bonus == s) * weights).sum(axis=1)]
    return three, contact


@cache
def _three_table() -> NDArray[np.bool_]:
    remaining = np.arange(MASKS, dtype=np.int64)
    out = np.zeros(MASKS, dtype=np.bool_)
    while remaining.any():
        group = remaining & -remaining
        for _ in range(15):
            group = _spread(group) & remaining
        out |= np.bitwise_count(group) == 3
        remaining &= ~group
    return out
