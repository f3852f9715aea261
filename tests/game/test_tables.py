from __future__ import annotations

from pharaon.game.board import TETROMINOES
from pharaon.game.tables import MALFORMED, bonus_table, line_table


def test_line_table_by_hand() -> None:
    table = line_table()
    assert table[0] == 0
    assert table[0xFFFF] == 10
    assert table[0x000F] == 1  # row 1
    assert table[0x1111] == 1  # column 1
    assert table[0x8421] == 1  # diagonal
    assert table[0x1248] == 1  # anti-diagonal
    assert table[0x111F] == 2  # row 1 and column 1
    assert table[0x0007] == 0  # three of a kind is a near miss


def test_bonus_table_counts_exact_four_groups() -> None:
    table = bonus_table()
    for placement in TETROMINOES:
        assert table[placement.mask] == 1
    assert table[0] == 0
    assert table[0b0111] == 0  # three in contact
    assert table[0x000F | 0xF000] == 2  # two separate rows
    assert table[0x001F] == MALFORMED  # five in contact
    assert table[0xFFFF] == MALFORMED
    assert table[0b1010_0101_1010_0101] == 0  # checkerboard: only single cells
