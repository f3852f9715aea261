"""Look-up tables over 16-bit masks, built once from the board's geometry.

A grid's cells holding one symbol form a 16-bit mask (bit ``row * 4 + column``), and so do the
bonus grid's; every question the evaluator asks of a mask is then one look-up in a 65,536-entry
table.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.typing import NDArray

from pharaon.game.board import BONUS_CELLS, GRID_CELLS, LINES, SIDE, bonus_neighbours

MASKS = 1 << GRID_CELLS
MALFORMED = -1


def _line_masks() -> list[int]:
    """The 10 lines of a grid as 16-bit masks over its own cells."""
    return [sum(1 << (i % GRID_CELLS) for i in line.cells) for line in LINES if line.grid == 0]


@cache
def line_table() -> NDArray[np.int8]:
    """(65536,) int8: how many of a grid's 10 lines lie wholly in the mask."""
    masks = np.arange(MASKS, dtype=np.int64)
    count = np.zeros(MASKS, dtype=np.int8)
    for lm in _line_masks():
        count += (masks & lm) == lm
    return count


def spread(m: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each mask grown by one step of horizontal and vertical contact in a 4 × 4 grid."""
    not_first = 0xEEEE  # cells that have a left neighbour
    not_last = 0x7777  # cells that have a right neighbour
    full = MASKS - 1
    return m | ((m << 1) & not_first) | ((m >> 1) & not_last) | ((m << SIDE) & full) | (m >> SIDE)


@cache
def _groups() -> tuple[NDArray[np.int8], NDArray[np.uint16], NDArray[np.bool_]]:
    """Each mask cut into its connected groups, once: (the groups of exactly 4 cells, -1 if
    one has 5 or more; the cells of those groups of 4; whether a group has exactly 3 cells)."""
    remaining = np.arange(MASKS, dtype=np.int64)
    groups = np.zeros(MASKS, dtype=np.int8)
    cells = np.zeros(MASKS, dtype=np.int64)
    three = np.zeros(MASKS, dtype=bool)
    bad = np.zeros(MASKS, dtype=bool)
    while remaining.any():
        group = remaining & -remaining  # lowest cell of what is left, 0 where nothing is
        for _ in range(GRID_CELLS - 1):
            group = spread(group) & remaining
        size = np.bitwise_count(group)
        groups += size == 4
        cells |= np.where(size == 4, group, 0)
        three |= size == 3
        bad |= size >= 5
        remaining &= ~group
    groups[bad] = MALFORMED
    return groups, cells.astype(np.uint16), three


def bonus_table() -> NDArray[np.int8]:
    """(65536,) int8: the mask's connected groups of exactly 4 cells, or -1 if one has ≥ 5."""
    return _groups()[0]


def group_cells_table() -> NDArray[np.uint16]:
    """(65536,) uint16: the mask's cells that lie in connected groups of exactly 4."""
    return _groups()[1]


def three_table() -> NDArray[np.bool_]:
    """(65536,) bool: whether the mask holds a connected group of exactly 3 cells (a near-miss
    of a bonus combination, pharaon.pool.layout's look)."""
    return _groups()[2]


def _check_geometry() -> None:
    # The shift-based contact of spread must agree with board.bonus_neighbours.
    for p in range(GRID_CELLS):
        grown = int(spread(np.array([1 << p], dtype=np.int64))[0])
        assert grown == (1 << p) | sum(1 << n for n in bonus_neighbours(p)), p
    assert len(BONUS_CELLS) == GRID_CELLS


_check_geometry()
