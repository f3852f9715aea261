"""A game unit: 64 cells, each holding one of the six symbols, and its ticket string.

The ticket string (docs/rules.md §5) is the 64 symbol codes, grid 1 to 4, each grid row by row, the
four grids joined by ``-``: 67 characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

from pharaon.game.board import GRID_CELLS, GRIDS, SIDE, UNIT_CELLS
from pharaon.game.rules import rules

SEPARATOR = "-"
TICKET_LENGTH = UNIT_CELLS + GRIDS - 1


class TicketError(ValueError):
    """A ticket string that is not a unit; the message says what is wrong and where."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One game unit; ``cells[i]`` is the symbol index (0..5) of cell ``i`` (see board.py)."""

    cells: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.cells) != UNIT_CELLS:
            raise ValueError(f"a unit has {UNIT_CELLS} cells, got {len(self.cells)}")
        count = len(rules().symbols)
        if min(self.cells) < 0 or max(self.cells) >= count:
            i, value = next((i, v) for i, v in enumerate(self.cells) if not 0 <= v < count)
            raise ValueError(f"cell {i}: symbol index must be 0..{count - 1}, got {value}")

    @classmethod
    def from_ticket(cls, ticket: str) -> Unit:
        return parse_ticket(ticket)

    @classmethod
    def from_array(cls, row: NDArray[np.int8]) -> Unit:
        """``row``: (64,) int8 symbol indices."""
        return cls(tuple(row.tolist()))

    def to_array(self) -> NDArray[np.int8]:
        """(64,) int8 symbol indices."""
        return np.array(self.cells, dtype=np.int8)

    @property
    def ticket(self) -> str:
        return format_ticket(self)

    def grid_codes(self, grid: int) -> str:
        """The 16 codes of 0-based ``grid``, row by row."""
        codes = _codes()
        start = grid * GRID_CELLS
        return "".join([codes[v] for v in self.cells[start : start + GRID_CELLS]])


@cache
def _codes() -> str:
    """The symbols' one-letter codes, by index (from the rules, which are loaded once)."""
    return rules().symbol_codes


def parse_ticket(ticket: str) -> Unit:
    """Read a ticket string; raise :class:`TicketError` naming the first problem."""
    if len(ticket) != TICKET_LENGTH:
        raise TicketError(
            f"a ticket has {TICKET_LENGTH} characters (4 grids of 16 codes joined by "
            f"'{SEPARATOR}'), got {len(ticket)}"
        )
    codes = rules().symbol_codes
    cells: list[int] = []
    for position, char in enumerate(ticket, start=1):
        grid, offset = divmod(position - 1, GRID_CELLS + 1)
        if offset == GRID_CELLS:
            if char != SEPARATOR:
                raise TicketError(
                    f"expected '{SEPARATOR}' at position {position} after grid {grid + 1}, "
                    f"got {char!r}"
                )
            continue
        index = codes.find(char) if char else -1
        if index < 0:
            row, column = divmod(offset, SIDE)
            raise TicketError(
                f"unknown symbol {char!r} at position {position} (grid {grid + 1}, row "
                f"{row + 1}, column {column + 1}); expected one of {' '.join(codes)}"
            )
        cells.append(index)
    return Unit(tuple(cells))


def format_ticket(unit: Unit) -> str:
    """The ticket string of ``unit``."""
    return SEPARATOR.join(unit.grid_codes(g) for g in range(GRIDS))


def tickets_to_array(tickets: list[str]) -> NDArray[np.int8]:
    """Parse many ticket strings at once into an (n, 64) int8 array; raises TicketError."""
    return np.array([parse_ticket(t).cells for t in tickets], dtype=np.int8).reshape(-1, UNIT_CELLS)


def array_to_tickets(units: NDArray[np.int8]) -> list[str]:
    """Ticket strings of an (n, 64) int8 array of valid symbol indices, fast."""
    alphabet = np.frombuffer(rules().symbol_codes.encode("ascii"), dtype=np.uint8)
    n = units.shape[0]
    chars = np.full((n, TICKET_LENGTH), ord(SEPARATOR), dtype=np.uint8)
    letters = alphabet[units.reshape(n, GRIDS, GRID_CELLS)]
    for g in range(GRIDS):
        start = g * (GRID_CELLS + 1)
        chars[:, start : start + GRID_CELLS] = letters[:, g]
    blob = chars.tobytes().decode("ascii")
    return [blob[i * TICKET_LENGTH : (i + 1) * TICKET_LENGTH] for i in range(n)]
