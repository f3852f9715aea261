"""Make winning units' background look like losing units'.

A winning unit's planned combinations forbid some symbols next to them (a cell touching a
pharaon group cannot be a pharaon), so after the layout the cells outside winning combinations
hold fewer of the winning symbols in winning units than in losing ones; counting symbols would
tell them apart. This step moves the winning units' free cells to the losing units' frequencies,
per cell class (bonus grid, elsewhere). It walks through the winning units, picking each with a
probability that follows the surplus left; a picked unit gets a (class, symbol in surplus) in
proportion to the surplus, one of its free cells of that class holding that symbol at random,
and a new symbol among the under-represented ones in proportion to what they lack. The change is
kept only if the unit still holds exactly its plan (a change touches two symbols' masks in one
grid and in the bonus grid: their line and group counts must stay the same) and shows the same
look (pharaon.pool.layout: three in contact in the bonus grid, or not). Losing units are never
touched.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.board import UNIT_CELLS
from pharaon.game.tables import bonus_table, line_table, three_table
from pharaon.pool import _kernels
from pharaon.pool.layout import (
    BONUS_ARRAY,
    BONUS_POSITION,
    CELL_CLASS,
    LOOK_SYMBOLS,
    LaidOut,
    Progress,
)
from pharaon.pool.streams import KeyStream

_WORDS: Final = 1 << 16  # random words per refill (512 KiB: stays in cache)
_GRID_CELLS: Final = np.arange(UNIT_CELLS, dtype=np.int64)
_PICK_FACTOR: Final = 1.5  # picks per unit of surplus in a pass (some changes are refused)
_MAX_PASSES: Final = 64


def balance(
    laid: LaidOut,
    *,
    winning: NDArray[np.bool_],
    stream: KeyStream,
    progress: Progress | None = None,
) -> None:
    """Adjust ``laid.units`` in place; ``winning``: (n,) bool, the units with a combination
    (the others are never changed). Planned cells are never changed. The cells changed are
    drawn from ``stream``."""
    winners = np.flatnonzero(winning)
    if winners.size in (0, winning.size):
        return
    lose, have = laid.free_symbols[0].astype(np.float64), laid.free_symbols[1]
    share = lose / lose.sum(axis=1, keepdims=True)
    deficit = share * have.sum(axis=1, keepdims=True) - have  # > 0: too few of that symbol
    state = _kernels.new_state()
    words = stream.words(_WORDS)
    for _ in range(_MAX_PASSES):
        surplus = float(-deficit[deficit < -0.5].sum())
        if surplus == 0.0:
            break
        rate = min(1.0, _PICK_FACTOR * surplus / winners.size)
        state[5] = 0
        while True:
            status = _kernels.balance_kernel(
                laid.units, laid.planned, winners, CELL_CLASS, deficit, _GRID_CELLS,
                BONUS_ARRAY, BONUS_POSITION, line_table(), bonus_table(), three_table(),
                LOOK_SYMBOLS, words, state, rate,
            )  # fmt: skip
            if status >= 0:
                break
            words = stream.words(_WORDS)
            next_winner = state[5]
            state = _kernels.new_state()
            state[5] = next_winner
        if status == 1:
            break
        if progress is not None:
            progress("balance", 0, 1)
    if progress is not None:
        progress("balance", 1, 1)
