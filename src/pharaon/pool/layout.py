"""Laying out units: planned combinations at random places on a random fill.

Every unit, winning or losing, goes through the same process (pharaon.pool._kernels):

1. its planned pieces are placed one after the other, bonus groups first, each at a place drawn
   uniformly (a tetromino among the 113 placements of the bonus grid, a line among the 40),
   drawn again while it clashes with a piece already placed (another symbol on a shared cell,
   the same line or group twice, a group touching a planned cell of its own symbol);
2. the other cells are drawn uniformly and independently from the six symbols, except that a
   cell touching a planned group cannot take the group's symbol (it is drawn again until it
   holds another: uniform among the others);
3. the unit is judged: exactly its planned bonus groups per symbol and no group of 5 or more,
   exactly its planned lines per symbol, and the look it was given (below). Otherwise steps 1
   to 3 start again from nothing.

The look. Left to itself, the layout shows three same-symbol cells in contact in the bonus grid
(scarab aside: a near-miss of a bonus combination) on 45.6 % of losing units but 36 % of
winning ones, whose planned groups take room and forbid their symbol around them: a player
could tell. So every unit, winning or losing, is given its look before it is drawn, by a coin
of the same weight, :data:`LOOK_THREE_SHARE` (what losing units show by themselves), from its
own stream: it shows such a three, or it does not, and is drawn again until it does as told.
A unit is then a uniform draw among the units that hold exactly its plan and show its look;
the balancing keeps every unit's look. (A losing unit given a coin of its own odds is drawn as
it would be without: the coin makes the two shares equal by construction, not by estimate.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.batch import SYMBOLS
from pharaon.game.board import (
    BONUS_CELLS,
    GRID_CELLS,
    LINES,
    TETROMINOES,
    UNIT_CELLS,
    bonus_neighbours,
)
from pharaon.game.rules import rules
from pharaon.game.tables import bonus_table, line_table, three_table
from pharaon.pool import _kernels
from pharaon.pool.streams import KeyStream

LINE_CELLS: Final = np.array([line.cells for line in LINES], dtype=np.int64)
"""(40, 4) int64: the unit cells of each line."""

TETROMINO_CELLS: Final = np.array(
    [[BONUS_CELLS[p] for p in t.positions] for t in TETROMINOES], dtype=np.int64
)
"""(113, 4) int64: the unit cells of each tetromino placement in the bonus grid."""

Progress = Callable[[str, int, int], None]
"""``progress(task, completed, total)``: called as work advances."""


class LayoutError(ValueError):
    """A plan that the layout cannot reach."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a kind of unit holds: its winning lines and bonus groups, by symbol index."""

    lines: tuple[int, ...]
    bonus: tuple[int, ...]

    def line_counts(self) -> NDArray[np.int8]:
        """(6,) int8: how many winning lines of each symbol."""
        return np.bincount(np.array(self.lines, dtype=np.int64), minlength=SYMBOLS).astype(np.int8)

    def bonus_counts(self) -> NDArray[np.int8]:
        """(6,) int8: how many 4-cell bonus groups of each symbol."""
        return np.bincount(np.array(self.bonus, dtype=np.int64), minlength=SYMBOLS).astype(np.int8)


@dataclass(frozen=True, slots=True, eq=False)
class LaidOut:
    """Drawn units and what the balancing needs to know of them.

    units: (n, 64) int8 symbol indices;
    planned: (n,) int64, bit c set where cell c belongs to one of the unit's combinations;
    free_symbols: (2, 2, 6) int64, cells outside the combinations by [losing 0 / winning 1,
    cell class (CELL_CLASS), symbol].
    """

    units: NDArray[np.int8]
    planned: NDArray[np.int64]
    free_symbols: NDArray[np.int64]

    def planned_cells(self) -> NDArray[np.bool_]:
        """(n, 64) bool: ``planned`` unpacked."""
        bits = self.planned.view(np.uint64)[:, None] >> np.arange(UNIT_CELLS, dtype=np.uint64)
        return (bits & np.uint64(1)).astype(np.bool_)


def _neighbour_cells() -> NDArray[np.bool_]:
    """(113, 64) bool: the unit cells in contact with each placement, outside it."""
    out = np.zeros((len(TETROMINOES), UNIT_CELLS), dtype=np.bool_)
    for t, placement in enumerate(TETROMINOES):
        for p in placement.positions:
            for q in bonus_neighbours(p):
                if q not in placement.positions:
                    out[t, BONUS_CELLS[q]] = True
    return out


TETROMINO_NEIGHBOURS: Final = _neighbour_cells()


def _neighbour_lists() -> NDArray[np.int64]:
    """(113, w) int64: the cells of TETROMINO_NEIGHBOURS row by row, padded with -1."""
    lists = [np.flatnonzero(row) for row in TETROMINO_NEIGHBOURS]
    out = np.full((len(lists), max(len(x) for x in lists)), -1, dtype=np.int64)
    for t, cells in enumerate(lists):
        out[t, : len(cells)] = cells
    return out


def _bonus_adjacency() -> NDArray[np.int64]:
    """(16, 4) int64: the bonus positions in contact with each, padded with -1."""
    out = np.full((GRID_CELLS, 4), -1, dtype=np.int64)
    for p in range(GRID_CELLS):
        near = bonus_neighbours(p)
        out[p, : len(near)] = near
    return out


def _masks(cell_lists: NDArray[np.int64]) -> NDArray[np.int64]:
    """(r,) int64: each row's cells (-1: none) as a 64-bit mask (bit 63 as the sign bit)."""
    masks = [sum(1 << int(c) for c in row if c >= 0) for row in cell_lists]
    return np.array(masks, dtype=np.uint64).view(np.int64)


BONUS_ARRAY: Final = np.array(BONUS_CELLS, dtype=np.int64)
BONUS_ADJACENCY: Final = _bonus_adjacency()
CELL_CLASS: Final = np.isin(np.arange(UNIT_CELLS), BONUS_ARRAY).astype(np.int64) ^ 1
"""(64,) int64: 0 for a cell of the bonus grid, 1 for the others."""
BONUS_POSITION: Final = np.full(UNIT_CELLS, -1, dtype=np.int64)
BONUS_POSITION[BONUS_ARRAY] = np.arange(GRID_CELLS)
"""(64,) int64: a cell's position in the bonus grid, -1 outside it."""
_NEIGHBOUR_LISTS: Final = _neighbour_lists()
_SCARAB: Final = next(i for i, s in enumerate(rules().symbols) if s.bonus_cents is None)
_LINE_MASKS: Final = _masks(LINE_CELLS)
_TETROMINO_MASKS: Final = _masks(TETROMINO_CELLS)
_NEIGHBOUR_MASKS: Final = _masks(_NEIGHBOUR_LISTS)
_WORDS: Final = 1 << 16  # random words per refill (512 KiB: stays in cache)
LOOK_THREE_SHARE: Final = 0.4559
"""The share of losing units that show three cells in contact in the bonus grid by themselves:
45.59 % of the 2,977,980 losing units of four regulation blocks made with fresh keys (standard
error 0.03 point). Every unit is given it: it decides the share, the layout's odds do not."""
_CHUNK_UNITS: Final = 1 << 15  # units per chunk (and per pair of random streams)


LOOK_SYMBOLS: Final = sum(1 << s for s in range(SYMBOLS) if s != _SCARAB)
"""The symbols whose three in contact make the look: all but the scarab (it never wins in the
bonus grid, so three scarabs are no near-miss)."""


def looks(stream: KeyStream, n: int) -> NDArray[np.int8]:
    """(n,) int8: each unit's look, 1 (show three in contact) with probability
    :data:`LOOK_THREE_SHARE`, else 0, from a 64-bit word of ``stream`` per unit."""
    limit = np.uint64(int(LOOK_THREE_SHARE * 2.0**64))
    return (stream.words(n) < limit).astype(np.int8)


def encode_plans(plans: Sequence[Plan]) -> tuple[NDArray[np.int64], ...]:
    """The plans as arrays for the kernels: pieces (k, m, 2) [symbol, is group] with groups
    first, piece counts (k,), wanted line and bonus counts (k, 6)."""
    width = max([len(p.lines) + len(p.bonus) for p in plans] + [1])
    pieces = np.zeros((len(plans), width, 2), dtype=np.int64)
    counts = np.zeros(len(plans), dtype=np.int64)
    for k, plan in enumerate(plans):
        order = [(s, 1) for s in plan.bonus] + [(s, 0) for s in plan.lines]
        counts[k] = len(order)
        for j, piece in enumerate(order):
            pieces[k, j] = piece
    want_lines = np.stack([p.line_counts() for p in plans]).astype(np.int64)
    want_bonus = np.stack([p.bonus_counts() for p in plans]).astype(np.int64)
    return pieces, counts, want_lines, want_bonus


def _draw_chunk(
    kinds: NDArray[np.int64],
    start: int,
    *,
    tables: tuple[NDArray[np.int64], ...],
    streams: tuple[KeyStream, KeyStream],
    out: LaidOut,
    look: NDArray[np.int8],
    max_attempts: int,
    plans: Sequence[Plan],
) -> NDArray[np.int64]:
    """Draw the units of one chunk (the kernel releases the GIL: chunks run in parallel);
    returns the chunk's free symbol counts."""
    pieces, counts, want_lines, want_bonus = tables
    layout_stream, fill_stream = streams
    layout_buf, layout_st = layout_stream.words(_WORDS), _kernels.new_state()
    fill_buf, fill_st = fill_stream.words(_WORDS), _kernels.new_state()
    free = np.zeros((2, 2, SYMBOLS), dtype=np.int64)
    n = kinds.shape[0]
    done = 0
    while done < n:
        done = _kernels.draw_units(
            kinds, start, done, pieces, counts, want_lines, want_bonus, LINE_CELLS,
            TETROMINO_CELLS, _LINE_MASKS, _TETROMINO_MASKS, _NEIGHBOUR_MASKS, _NEIGHBOUR_LISTS,
            BONUS_ARRAY, line_table(), bonus_table(), three_table(), LOOK_SYMBOLS, look,
            _kernels.PAIR_SYMBOLS, _kernels.BYTE_SYMBOL,
            layout_buf, layout_st, fill_buf, fill_st, max_attempts, out.units.view(np.int64),
            out.planned, free,
        )  # fmt: skip
        if done < 0:
            unit = -1 - done
            raise LayoutError(
                f"a unit of plan {plans[int(kinds[unit])]} could not be laid out in "
                f"{max_attempts} attempts"
            )
        if layout_st[1]:
            attempts = layout_st[4]
            layout_buf, layout_st = layout_stream.words(_WORDS), _kernels.new_state()
            layout_st[4] = attempts
        if fill_st[1]:
            fill_buf, fill_st = fill_stream.words(_WORDS), _kernels.new_state()
    return free


def lay_out(
    plans: Sequence[Plan],
    kinds: NDArray[np.int64],
    *,
    layout_stream: KeyStream,
    fill_stream: KeyStream,
    look: NDArray[np.int8] | None = None,
    progress: Progress | None = None,
    max_attempts: int = 100_000,
) -> LaidOut:
    """Draw one unit per entry of ``kinds`` ((n,) indices into ``plans``).

    Unit ``i`` holds exactly the combinations of ``plans[kinds[i]]``; where the combinations go
    comes from ``layout_stream``, the other symbols from ``fill_stream``; ``look`` ((n,) int8,
    :func:`looks`) gives each unit's look, none if None. Raises
    :class:`LayoutError` if a unit still misses its plan after ``max_attempts`` draws.
    """
    n = kinds.shape[0]
    tables = encode_plans(plans)
    out = LaidOut(
        units=np.empty((n, UNIT_CELLS), dtype=np.int8),
        planned=np.empty(n, dtype=np.int64),
        free_symbols=np.zeros((2, 2, SYMBOLS), dtype=np.int64),
    )
    kinds = np.ascontiguousarray(kinds, dtype=np.int64)
    look = np.full(n, -1, dtype=np.int8) if look is None else np.ascontiguousarray(look, np.int8)
    # Fixed chunks, each with substreams of its own: the block depends on the keys only, not
    # on how many threads draw the chunks.
    starts = list(range(0, n, _CHUNK_UNITS))
    streams = [
        (layout_stream.substream(2 * c + 1), fill_stream.substream(2 * c + 2))
        for c in range(len(starts))
    ]

    def draw(c: int) -> NDArray[np.int64]:
        start, stop = starts[c], min(n, starts[c] + _CHUNK_UNITS)
        return _draw_chunk(
            kinds[start:stop],
            start,
            tables=tables,
            streams=streams[c],
            out=out,
            look=look[start:stop],
            max_attempts=max_attempts,
            plans=plans,
        )

    workers = max(1, min(len(starts), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(draw, c) for c in range(len(starts))]
        for done, future in enumerate(futures, start=1):
            out.free_symbols[...] += future.result()  # re-raises a LayoutError
            if progress is not None:
                progress("layout", min(n, done * _CHUNK_UNITS), n)
    return out
