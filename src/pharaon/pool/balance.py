"""Make winning units' background look like losing units'.

A winning unit's planned combinations forbid some symbols next to them (a cell touching a
pharaon group cannot be a pharaon), so after the layout the cells outside winning combinations
hold fewer of the winning symbols in winning units than in losing ones; counting symbols would
tell them apart. This step moves the winning units' free cells to the losing units' frequencies,
per cell class (bonus grid, elsewhere): it picks a winning unit and a cell at random, and if the
cell is free and holds an over-represented symbol, redraws it among the under-represented ones
(in proportion to what they lack); the change is kept only if the unit still holds exactly its
plan (the judge of pharaon.pool._kernels). Losing units are never touched.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.batch import SYMBOLS
from pharaon.game.board import UNIT_CELLS
from pharaon.game.tables import bonus_table, line_table
from pharaon.pool import _kernels
from pharaon.pool.layout import (
    BONUS_ARRAY,
    Plan,
    Progress,
    encode_plans,
)

CELL_CLASS: Final = np.isin(np.arange(UNIT_CELLS), BONUS_ARRAY).astype(np.int64) ^ 1
"""(64,) int64: 0 for a cell of the bonus grid, 1 for the others."""
_WORDS: Final = 1 << 20
_PROPOSALS_PER_CHANGE: Final = 40


def balance(
    units: NDArray[np.int8],
    *,
    plans: list[Plan],
    kinds: NDArray[np.int64],
    planned: NDArray[np.bool_],
    rng: np.random.Generator,
    progress: Progress | None = None,
) -> None:
    """Adjust ``units`` ((n, 64) int8) in place.

    ``kinds``: (n,) index of each unit's plan in ``plans`` (plan 0 is losing, no combination);
    ``planned``: (n, 64) bool, the cells of each unit's planned combinations (never changed).
    """
    winning = kinds > 0
    winners = np.flatnonzero(winning)
    losers = np.flatnonzero(~winning)
    if winners.size == 0 or losers.size == 0:
        return
    lose = np.zeros((2, SYMBOLS), dtype=np.int64)
    _kernels.count_symbols(units, losers, CELL_CLASS, planned, lose)
    have = np.zeros((2, SYMBOLS), dtype=np.int64)
    _kernels.count_symbols(units, winners, CELL_CLASS, planned, have)
    share = lose / lose.sum(axis=1, keepdims=True)
    deficit = share * have.sum(axis=1, keepdims=True) - have  # > 0: too few of that symbol
    _, _, want_lines, want_bonus = encode_plans(plans)
    budget = int(np.clip(deficit, 0, None).sum()) * _PROPOSALS_PER_CHANGE + 1_000
    kinds = np.ascontiguousarray(kinds, dtype=np.int64)
    while True:
        left = _kernels.balance_kernel(
            units, planned, winners, kinds, want_lines, want_bonus, CELL_CLASS, deficit,
            BONUS_ARRAY, line_table(), bonus_table(),
            rng.bit_generator.random_raw(_WORDS), _kernels.new_state(), budget,
        )  # fmt: skip
        if left >= 0:
            break
        budget = max(1, budget - _WORDS // 3)  # roughly what a buffer of words proposes
        if progress is not None:
            progress("balance", 0, 1)
    if progress is not None:
        progress("balance", 1, 1)
