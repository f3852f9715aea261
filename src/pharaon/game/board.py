"""The board's geometry: 4 grids of 4 × 4 cells, their 40 lines, and the bonus grid.

A cell is addressed by its index ``0..63`` in a unit: ``grid * 16 + row * 4 + column``, all
numbered from 0 here (people see them numbered from 1). On screen grids 1 2 sit on top and 3 4
below, an 8 × 8 board; the bonus grid is its central 4 × 4 (art. 4.4.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

GRIDS: Final = 4
SIDE: Final = 4
GRID_CELLS: Final = SIDE * SIDE
UNIT_CELLS: Final = GRIDS * GRID_CELLS


def cell_index(grid: int, row: int, column: int) -> int:
    """The index in a unit of a cell given 0-based (grid, row, column)."""
    return grid * GRID_CELLS + row * SIDE + column


def cell_position(index: int) -> tuple[int, int, int]:
    """The 0-based (grid, row, column) of a unit's cell ``index``."""
    grid, rest = divmod(index, GRID_CELLS)
    row, column = divmod(rest, SIDE)
    return grid, row, column


@dataclass(frozen=True, slots=True)
class Line:
    """One of a grid's 10 lines: ``kind`` is row, column, diagonal or anti-diagonal."""

    grid: int
    kind: str
    number: int  # 0-based row or column; 0 for the diagonals
    cells: tuple[int, int, int, int]  # unit cell indices, in reading order along the line


def _four(cells: list[int]) -> tuple[int, int, int, int]:
    a, b, c, d = cells
    return a, b, c, d


def _grid_lines(grid: int) -> list[Line]:
    at = cell_index
    n = range(SIDE)
    lines = [Line(grid, "row", r, _four([at(grid, r, c) for c in n])) for r in n]
    lines += [Line(grid, "column", c, _four([at(grid, r, c) for r in n])) for c in n]
    lines.append(Line(grid, "diagonal", 0, _four([at(grid, i, i) for i in n])))
    lines.append(Line(grid, "anti-diagonal", 0, _four([at(grid, i, SIDE - 1 - i) for i in n])))
    return lines


LINES: Final[tuple[Line, ...]] = tuple(line for g in range(GRIDS) for line in _grid_lines(g))
"""The 40 lines of a unit: 10 per grid (4 rows, 4 columns, 2 diagonals), grid by grid."""


def _bonus_source(bonus_row: int, bonus_column: int) -> int:
    board_row, board_column = bonus_row + 2, bonus_column + 2
    grid = (board_row // SIDE) * 2 + board_column // SIDE
    return cell_index(grid, board_row % SIDE, board_column % SIDE)


BONUS_CELLS: Final[tuple[int, ...]] = tuple(
    _bonus_source(r, c) for r in range(SIDE) for c in range(SIDE)
)
"""Bonus grid cell ``r * 4 + c`` (0-based) is the unit's cell ``BONUS_CELLS[r * 4 + c]``.

Grid 1 gives its rows 3–4 × columns 3–4, grid 2 rows 3–4 × columns 1–2, grid 3 rows 1–2 ×
columns 3–4, grid 4 rows 1–2 × columns 1–2, each in its place."""


def _neighbours(position: int) -> tuple[int, ...]:
    r, c = divmod(position, SIDE)
    out = []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        rr, cc = r + dr, c + dc
        if 0 <= rr < SIDE and 0 <= cc < SIDE:
            out.append(rr * SIDE + cc)
    return tuple(out)


_NEIGHBOURS: Final[tuple[tuple[int, ...], ...]] = tuple(_neighbours(p) for p in range(SIDE * SIDE))


def bonus_neighbours(position: int) -> tuple[int, ...]:
    """The bonus positions in horizontal or vertical contact with ``position`` (0..15)."""
    return _NEIGHBOURS[position]


@dataclass(frozen=True, slots=True)
class Placement:
    """A tetromino lying in the bonus grid: its shape letter and its four bonus positions."""

    shape: str
    positions: tuple[int, int, int, int]  # sorted bonus positions 0..15

    @property
    def mask(self) -> int:
        return sum(1 << p for p in self.positions)


def _normalise(cells: frozenset[tuple[int, int]]) -> frozenset[tuple[int, int]]:
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    return frozenset((r - r0, c - c0) for r, c in cells)


def _orientations(cells: frozenset[tuple[int, int]]) -> set[frozenset[tuple[int, int]]]:
    found: set[frozenset[tuple[int, int]]] = set()
    shape = cells
    for _ in range(4):
        shape = _normalise(frozenset((c, -r) for r, c in shape))  # quarter turn
        found.add(shape)
    return found


# Free tetrominoes, mirror images named apart (L and J, S and Z) as players know them.
_SHAPES: Final = {
    "I": frozenset({(0, 0), (0, 1), (0, 2), (0, 3)}),
    "O": frozenset({(0, 0), (0, 1), (1, 0), (1, 1)}),
    "T": frozenset({(0, 0), (0, 1), (0, 2), (1, 1)}),
    "S": frozenset({(0, 1), (0, 2), (1, 0), (1, 1)}),
    "Z": frozenset({(0, 0), (0, 1), (1, 1), (1, 2)}),
    "L": frozenset({(0, 0), (1, 0), (2, 0), (2, 1)}),
    "J": frozenset({(0, 1), (1, 1), (2, 1), (2, 0)}),
}


def bonus_shapes() -> dict[str, list[tuple[int, int]]]:
    """The winning shapes of the bonus, each as it is drawn in the rules: its letter and its
    cells (row, column from 0), in any of its rotations in the grid."""
    return {name: sorted(cells) for name, cells in _SHAPES.items()}


def _placements() -> tuple[Placement, ...]:
    out: list[Placement] = []
    for name, base in _SHAPES.items():
        for shape in sorted(_orientations(base), key=sorted):
            height = 1 + max(r for r, _ in shape)
            width = 1 + max(c for _, c in shape)
            for dr in range(SIDE - height + 1):
                for dc in range(SIDE - width + 1):
                    positions = sorted((r + dr) * SIDE + c + dc for r, c in shape)
                    out.append(Placement(name, _four(positions)))
    return tuple(out)


TETROMINOES: Final[tuple[Placement, ...]] = _placements()
"""The 113 ways a tetromino lies in the bonus grid (19 fixed shapes, every place)."""
