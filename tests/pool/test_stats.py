from __future__ import annotations

import numpy as np

from pharaon.game.evaluate import evaluate
from pharaon.game.unit import Unit
from pharaon.pool.blockfile import Block
from pharaon.pool.stats import free_symbol_counts, near_misses, winning_cells


def test_winning_cells_are_the_cells_of_the_combinations(small_block: Block) -> None:
    cells = winning_cells(small_block.units)
    for row in range(0, small_block.size, 7):
        unit = Unit.from_array(small_block.units[row])
        want = np.zeros(64, dtype=bool)
        for c in evaluate(unit).combinations:
            for g, r, col in c.cells:
                want[(g - 1) * 16 + (r - 1) * 4 + (col - 1)] = True
        assert np.array_equal(cells[row], want), row


def test_free_symbol_counts_cover_every_free_cell(small_block: Block) -> None:
    winning = small_block.lots_cents > 0
    counts = free_symbol_counts(small_block.units, winning)
    assert counts[0].sum() == (~winning).sum() * 64
    assert counts.sum() == small_block.size * 64 - winning_cells(small_block.units).sum()


def test_near_misses() -> None:
    units = np.tile(np.array([0, 1, 2, 3] * 16, dtype=np.int8), (2, 1))
    three, contact = near_misses(units)
    assert not three[0]
    units[1, 0:3] = 4  # J J J X on grid 1 row 1
    three, _ = near_misses(units)
    assert three[1]
    assert contact.shape == (2,)
