"""The batch evaluator: lots of a million units in a blink, for the factory and the auditor.

A unit's 64 int8 cells are read as eight 64-bit words, two per grid. For each word a few shifts
gather bit k of its eight symbol indices into one byte, so each grid becomes three 16-bit
bit-planes; the bonus grid's planes are moved out of the grids' in runs of adjacent bits. The
mask of any symbol is then three ANDs away, and every line or bonus check is one look-up in the
tables of tables.py. The loop is compiled once by numba and cached on disk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import numba
import numpy as np
from numpy.typing import NDArray

from pharaon.game.board import BONUS_CELLS, GRIDS, UNIT_CELLS, cell_position
from pharaon.game.rules import rules
from pharaon.game.tables import bonus_table, line_table

SYMBOLS = 6
_ROWS_PER_THREAD = 1 << 16  # fewer rows than this per thread: not worth a thread
_LOW_BITS = 0x0101010101010101  # bit 0 of each byte
_NOT_CODE = ~0x0707070707070707  # bits no index 0..7 has

if sys.byteorder != "little":  # pragma: no cover - the word view assumes little-endian bytes
    raise ImportError("the batch evaluator needs a little-endian machine")


def _bonus_runs() -> NDArray[np.int64]:
    """(r, 4) int64 rows (grid, first bit in the grid, first bit in the bonus grid, length)."""
    runs: list[list[int]] = []
    for position, cell in enumerate(BONUS_CELLS):
        grid, row, column = cell_position(cell)
        bit = row * 4 + column
        last = runs[-1] if runs else None
        if last and last[0] == grid and last[1] + last[3] == bit and last[2] + last[3] == position:
            last[3] += 1
        else:
            runs.append([grid, bit, position, 1])
    return np.array(runs, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Per unit of an (n, 64) batch.

    lots_cents: (n,) int64, 0 for a malformed unit;
    combinations: (n,) int16, winning combinations (lines and paying bonus groups);
    malformed: (n,) bool, a bonus group of ≥ 5 cells or a cell outside the six symbols;
    line_counts: (n, 6) int8, full lines per symbol index;
    bonus_counts: (n, 6) int8, 4-cell bonus groups per symbol index (scarab groups included,
    though they pay nothing).
    """

    lots_cents: NDArray[np.int64]
    combinations: NDArray[np.int16]
    malformed: NDArray[np.bool_]
    line_counts: NDArray[np.int8]
    bonus_counts: NDArray[np.int8]


def symbol_masks(p0: int, p1: int, p2: int) -> tuple[int, int, int, int, int, int]:
    """The 16-bit masks of symbol indices 0..5 from the three bit-planes of 16 cells."""
    n0 = ~p0 & 0xFFFF
    n1 = ~p1 & 0xFFFF
    n2 = ~p2 & 0xFFFF
    return (
        n0 & n1 & n2,
        p0 & n1 & n2,
        n0 & p1 & n2,
        p0 & p1 & n2,
        n0 & n1 & p2,
        p0 & n1 & p2,
    )


def bit_plane(word: int, k: int) -> int:
    """Bit k of each of the word's eight bytes, as one byte (bit j from byte j).

    Shifts and ORs fold the eight bits into the low byte; a multiply would be shorter, but it
    overflows a signed 64-bit integer, which the compiler may treat as undefined.
    """
    x = (word >> k) & _LOW_BITS
    x |= x >> 7
    x |= x >> 14
    x |= x >> 28
    return x & 0xFF


def _kernel(  # noqa: PLR0917  (numba compiles positional arguments only)
    words: Any,
    runs: Any,
    lines: Any,
    groups: Any,
    line_gain: Any,
    bonus_gain: Any,
    lots: Any,
    combos: Any,
    malformed: Any,
    line_counts: Any,
    bonus_counts: Any,
) -> None:
    n = words.shape[0]
    planes = np.zeros((GRIDS + 1, 3), dtype=np.int64)
    for i in range(n):
        bad = 0
        for s in range(SYMBOLS):
            line_counts[i, s] = 0
        for g in range(GRIDS):
            a = words[i, 2 * g]
            b = words[i, 2 * g + 1]
            bad |= (a | b) & _NOT_CODE
            p0 = bit_plane(a, 0) | (bit_plane(b, 0) << 8)
            p1 = bit_plane(a, 1) | (bit_plane(b, 1) << 8)
            p2 = bit_plane(a, 2) | (bit_plane(b, 2) << 8)
            bad |= p1 & p2  # indices 6 and 7 are no symbol
            planes[g, 0] = p0
            planes[g, 1] = p1
            planes[g, 2] = p2
            masks = symbol_masks(p0, p1, p2)
            for s in range(SYMBOLS):
                line_counts[i, s] += lines[masks[s]]
        for k in range(3):
            bonus = 0
            for r in range(runs.shape[0]):
                width = (1 << runs[r, 3]) - 1
                bonus |= ((planes[runs[r, 0], k] >> runs[r, 1]) & width) << runs[r, 2]
            planes[GRIDS, k] = bonus
        masks = symbol_masks(planes[GRIDS, 0], planes[GRIDS, 1], planes[GRIDS, 2])
        total = 0
        count = 0
        for s in range(SYMBOLS):
            got = groups[masks[s]]
            if got < 0:
                bad = 1
                got = 0
            bonus_counts[i, s] = got
            total += line_counts[i, s] * line_gain[s] + got * bonus_gain[s]
            count += line_counts[i, s]
            if bonus_gain[s] > 0:
                count += got
        malformed[i] = bad != 0
        lots[i] = 0 if bad != 0 else total
        combos[i] = count


symbol_masks = numba.njit(inline="always")(symbol_masks)
bit_plane = numba.njit(inline="always")(bit_plane)
_compiled = cast(Callable[..., None], numba.njit(cache=True, nogil=True)(_kernel))


def _gains(stake_cents: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    game = rules()
    k = game.multiplier(stake_cents)
    line_gain = np.array([s.line_cents * k for s in game.symbols], dtype=np.int64)
    bonus_gain = np.array([(s.bonus_cents or 0) * k for s in game.symbols], dtype=np.int64)
    return line_gain, bonus_gain


def evaluate_batch(
    units: NDArray[np.int8], stake_cents: int = 100, *, threads: int = 1
) -> BatchResult:
    """Evaluate ``units``, an (n, 64) int8 array of symbol indices, at ``stake_cents``;
    ``threads`` > 1 splits the rows between that many threads (the loop releases the GIL)."""
    if units.ndim != 2 or units.shape[1] != UNIT_CELLS:
        raise ValueError(f"units must have shape (n, {UNIT_CELLS}), got {units.shape}")
    if units.dtype != np.int8:
        raise ValueError(f"units must be int8, got {units.dtype}")
    line_gain, bonus_gain = _gains(stake_cents)
    n = units.shape[0]
    result = BatchResult(
        lots_cents=np.empty(n, dtype=np.int64),
        combinations=np.empty(n, dtype=np.int16),
        malformed=np.empty(n, dtype=np.bool_),
        line_counts=np.empty((n, SYMBOLS), dtype=np.int8),
        bonus_counts=np.empty((n, SYMBOLS), dtype=np.int8),
    )
    words = np.ascontiguousarray(units).view(np.int64)
    tables = (_bonus_runs(), line_table(), bonus_table(), line_gain, bonus_gain)

    def run(start: int, stop: int) -> None:
        _compiled(
            words[start:stop],
            *tables,
            result.lots_cents[start:stop],
            result.combinations[start:stop],
            result.malformed[start:stop],
            result.line_counts[start:stop],
            result.bonus_counts[start:stop],
        )

    parts = max(1, min(threads, n // _ROWS_PER_THREAD))
    if parts == 1:
        run(0, n)
        return result
    bounds = [n * p // parts for p in range(parts + 1)]
    with ThreadPoolExecutor(max_workers=parts - 1) as pool:
        others = [pool.submit(run, bounds[p], bounds[p + 1]) for p in range(1, parts)]
        run(bounds[0], bounds[1])
        for other in others:
            other.result()
    return result
