from __future__ import annotations

from collections import Counter

from pharaon.game.board import (
    BONUS_CELLS,
    LINES,
    TETROMINOES,
    bonus_neighbours,
    cell_index,
    cell_position,
)


def test_forty_lines_ten_per_grid() -> None:
    assert len(LINES) == 40
    assert Counter(line.grid for line in LINES) == {0: 10, 1: 10, 2: 10, 3: 10}
    assert Counter(line.kind for line in LINES) == {
        "row": 16,
        "column": 16,
        "diagonal": 4,
        "anti-diagonal": 4,
    }
    for line in LINES:
        assert all(cell_position(i)[0] == line.grid for i in line.cells), "lines never cross grids"


def test_some_lines_by_hand() -> None:
    by_name = {(line.grid, line.kind, line.number): line.cells for line in LINES}
    assert by_name[(0, "row", 0)] == (0, 1, 2, 3)
    assert by_name[(1, "column", 2)] == (18, 22, 26, 30)
    assert by_name[(2, "diagonal", 0)] == (32, 37, 42, 47)
    assert by_name[(3, "anti-diagonal", 0)] == (51, 54, 57, 60)


def test_bonus_grid_is_the_central_square_of_the_board() -> None:
    # Grid 1: rows 3-4 x columns 3-4; grid 2: rows 3-4 x columns 1-2; grid 3: rows 1-2 x
    # columns 3-4; grid 4: rows 1-2 x columns 1-2 (numbered from 1), each in its place.
    expected = [
        (0, 2, 2), (0, 2, 3), (1, 2, 0), (1, 2, 1),
        (0, 3, 2), (0, 3, 3), (1, 3, 0), (1, 3, 1),
        (2, 0, 2), (2, 0, 3), (3, 0, 0), (3, 0, 1),
        (2, 1, 2), (2, 1, 3), (3, 1, 0), (3, 1, 1),
    ]  # fmt: skip
    assert [cell_position(i) for i in BONUS_CELLS] == expected
    assert BONUS_CELLS[0] == cell_index(0, 2, 2)


def test_bonus_contact_is_horizontal_or_vertical() -> None:
    assert sorted(bonus_neighbours(0)) == [1, 4]
    assert sorted(bonus_neighbours(5)) == [1, 4, 6, 9]
    assert sorted(bonus_neighbours(15)) == [11, 14]


def test_113_tetromino_placements() -> None:
    assert len(TETROMINOES) == 113
    assert len({p.positions for p in TETROMINOES}) == 113
    assert Counter(p.shape for p in TETROMINOES) == {
        "I": 8,  # 4 rows + 4 columns
        "O": 9,
        "T": 24,  # 4 orientations x 6 places
        "S": 12,
        "Z": 12,
        "L": 24,
        "J": 24,
    }
    for p in TETROMINOES:
        cells = set(p.positions)
        # connected: every cell touches another one of the four
        assert all(any(n in cells for n in bonus_neighbours(c)) for c in cells)
