"""Units built by hand for the tests: a clean background and cells changed on it."""

from __future__ import annotations

from pharaon.game.unit import Unit, parse_ticket

# Every grid: PYOX / JSPY / OXJS / PYOX. No line anywhere, and the bonus grid
#   J S O X
#   O X P Y
#   O X P Y
#   P Y J S
# holds no same-symbol group larger than 2: a unit that wins nothing.
BACKGROUND = "-".join(["PYOXJSPYOXJSPYOX"] * 4)

# Grid cells (grid, row, column) from 1, of the bonus grid's cell (row, column) from 1.
BONUS_AT = {
    (r, c): (
        1 + (r > 2) * 2 + (c > 2),
        (r + 1) % 4 + 1 if r <= 2 else r - 2,
        (c + 1) % 4 + 1 if c <= 2 else c - 2,
    )
    for r in range(1, 5)
    for c in range(1, 5)
}


def with_cells(changes: dict[tuple[int, int, int], str], base: str = BACKGROUND) -> Unit:
    """``base`` with the cells at (grid, row, column), numbered from 1, set to symbol codes."""
    chars = list(base)
    for (grid, row, column), code in changes.items():
        chars[(grid - 1) * 17 + (row - 1) * 4 + (column - 1)] = code
    return parse_ticket("".join(chars))


def with_bonus(changes: dict[tuple[int, int], str], base: str = BACKGROUND) -> Unit:
    """``base`` with bonus-grid cells at (row, column), numbered from 1, set to symbol codes."""
    return with_cells({BONUS_AT[rc]: code for rc, code in changes.items()}, base)


def bonus_lab(one: str, other: str) -> dict[tuple[int, int], str]:
    """A bonus grid painted as a checkerboard of two symbols: every group is one cell.

    On the background, nothing painted in the bonus grid can complete a line: each grid's row,
    column and diagonal through its bonus square has two background cells that differ.
    """
    return {(r, c): one if (r + c) % 2 == 0 else other for r in range(1, 5) for c in range(1, 5)}
