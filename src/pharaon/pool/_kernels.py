"""Compiled loops of the layout and the balancing (numba), one unit at a time.

Randomness comes in as buffers of 64-bit words drawn by numpy's PCG64 from the HKDF sub-keys;
a kernel consumes them in order and stops, reporting where, when one runs dry, so the caller
refills and calls again: the result depends only on the keys. Symbols are base-6 digits of
words below 3 · 6²⁴ (exactly uniform); indices below m come from words below the largest
multiple of m (exactly uniform).

Each unit is judged here with the game core's mask tables (pharaon.game.tables: full lines and
bonus groups per symbol); the block is judged again, unit by unit, by pharaon.game.batch when
it is verified.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

import numba
import numpy as np

SIX24: Final = 6**24
_DIGITS_LIMIT: Final = np.uint64(3 * SIX24)  # < 2^64: words below it give 24 uniform digits
_SIX24: Final = np.uint64(SIX24)
_ALL_ONES: Final = np.uint64(0xFFFFFFFFFFFFFFFF)
_MAX_TRIES: Final = 200  # tries to place one piece before starting the unit again
_STATE: Final = 5  # [position, exhausted, digit word, digits left, attempts at this unit]


def _word(buf: Any, st: Any) -> Any:
    pos = st[0]
    if pos >= buf.shape[0]:
        st[1] = 1
        return np.uint64(0)
    st[0] = pos + 1
    return buf[pos]


def _below(buf: Any, st: Any, m: int) -> Any:
    """A uniform integer in 0..m-1."""
    mm = np.uint64(m)
    limit = _ALL_ONES - (_ALL_ONES % mm) - np.uint64(1)
    while True:
        r = _word(buf, st)
        if st[1]:
            return np.int64(0)
        if r <= limit:
            return np.int64(r % mm)


def _bonus_ok(cells: Any, want_b: Any, bonus_cells: Any, groups: Any, masks: Any) -> bool:
    """Whether the bonus grid holds exactly ``want_b`` groups of 4 per symbol and none of 5 or
    more (``groups``: pharaon.game.tables.bonus_table)."""
    for s in range(6):
        masks[s] = 0
    for p in range(16):
        masks[cells[bonus_cells[p]]] |= 1 << p
    for s in range(6):  # noqa: SIM110  (numba compiles loops, not generators)
        if groups[masks[s]] != want_b[s]:  # -1 (a group of 5 or more) never matches
            return False
    return True


def _lines_ok(cells: Any, want_l: Any, lines: Any, masks: Any, counts: Any) -> bool:
    """Whether the grids hold exactly ``want_l`` full lines per symbol (``lines``:
    pharaon.game.tables.line_table)."""
    for s in range(6):
        counts[s] = 0
    for g in range(4):
        for s in range(6):
            masks[s] = 0
        for c in range(16):
            masks[cells[16 * g + c]] |= 1 << c
        for s in range(6):
            counts[s] += lines[masks[s]]
    for s in range(6):  # noqa: SIM110  (numba compiles loops, not generators)
        if counts[s] != want_l[s]:
            return False
    return True


def _fill(  # noqa: PLR0917  (numba compiles positional arguments only)
    cells: Any, assigned: Any, forbidden: Any, order: Any, start: int, stop: int, buf: Any, st: Any
) -> None:
    """Draw cells ``order[start:stop]`` that no piece took: uniform among the symbols not
    forbidden there. Base-6 digits of uniform words, kept in locals for speed."""
    digits = np.uint64(st[2])
    left = st[3]
    for o in range(start, stop):
        c = order[o]
        if assigned[c] >= 0:
            cells[c] = assigned[c]
            continue
        s = np.int64(0)
        while True:
            if left == 0:
                r = _word(buf, st)
                if st[1]:
                    return
                if r >= _DIGITS_LIMIT:
                    continue
                digits = r % _SIX24
                left = 24
            s = np.int64(digits % np.uint64(6))
            digits = digits // np.uint64(6)
            left -= 1
            if not (forbidden[c] >> s) & 1:
                break
        cells[c] = s
    st[2] = np.int64(digits)
    st[3] = left


def _draw_units(  # noqa: PLR0917  (numba compiles positional arguments only)
    kinds: Any,
    start: int,
    pieces: Any,
    n_pieces: Any,
    want_l: Any,
    want_b: Any,
    line_cells: Any,
    tet_cells: Any,
    tet_nbrs: Any,
    bonus_cells: Any,
    fill_order: Any,
    lines: Any,
    groups: Any,
    layout_buf: Any,
    layout_st: Any,
    fill_buf: Any,
    fill_st: Any,
    max_attempts: int,
    units: Any,
    planned: Any,
) -> Any:
    """Draw units ``start..`` until done (returns n), a buffer runs dry (returns the first unit
    not drawn) or a unit fails ``max_attempts`` times (returns -1 - its index).

    ``pieces[k, j]`` = (symbol, is_group) of plan k's j-th piece, groups first.
    """
    n = kinds.shape[0]
    assigned = np.empty(64, dtype=np.int8)
    forbidden = np.empty(64, dtype=np.uint8)
    cells = np.empty(64, dtype=np.int8)
    masks = np.empty(6, dtype=np.int64)
    counts = np.empty(6, dtype=np.int64)
    for i in range(start, n):
        k = kinds[i]
        while True:
            # Attempts at this unit, counted across calls (a call may stop for more words).
            layout_st[4] += 1
            if layout_st[4] > max_attempts:
                return -1 - i
            for c in range(64):
                assigned[c] = -1
                forbidden[c] = 0
            placed = True
            for j in range(n_pieces[k]):
                sym = pieces[k, j, 0]
                group = pieces[k, j, 1] == 1
                ok = False
                idx = 0
                for _ in range(_MAX_TRIES):
                    idx = _below(layout_buf, layout_st, 113 if group else 40)
                    if layout_st[1]:
                        return i
                    clash = False
                    same = True
                    for t in range(4):
                        c = tet_cells[idx, t] if group else line_cells[idx, t]
                        a = assigned[c]
                        if a >= 0 and a != sym:
                            clash = True
                        if a != sym:
                            same = False
                        if (forbidden[c] >> sym) & 1:
                            clash = True
                    if same:
                        clash = True
                    if group and not clash:
                        for t in range(tet_nbrs.shape[1]):
                            c = tet_nbrs[idx, t]
                            if c >= 0 and assigned[c] == sym:
                                clash = True
                    if not clash:
                        ok = True
                        break
                if not ok:
                    placed = False
                    break
                for t in range(4):
                    c = tet_cells[idx, t] if group else line_cells[idx, t]
                    assigned[c] = sym
                if group:
                    for t in range(tet_nbrs.shape[1]):
                        c = tet_nbrs[idx, t]
                        if c >= 0:
                            forbidden[c] |= np.uint8(1 << sym)
            if not placed:
                continue
            # Bonus cells first: a stray group there rejects the unit before the rest is drawn.
            _fill(cells, assigned, forbidden, fill_order, 0, 16, fill_buf, fill_st)
            if fill_st[1]:
                return i
            if not _bonus_ok(cells, want_b[k], bonus_cells, groups, masks):
                continue
            _fill(cells, assigned, forbidden, fill_order, 16, 64, fill_buf, fill_st)
            if fill_st[1]:
                return i
            if _lines_ok(cells, want_l[k], lines, masks, counts):
                break
        layout_st[4] = 0
        for c in range(64):
            units[i, c] = cells[c]
            planned[i, c] = assigned[c] >= 0
    return n


def _count_symbols(units: Any, rows: Any, cell_class: Any, skip: Any, out: Any) -> None:
    """out[class, symbol] += cells of ``units[rows]`` not marked in ``skip[rows]``."""
    for r in range(rows.shape[0]):
        i = rows[r]
        for c in range(64):
            if not skip[i, c]:
                out[cell_class[c], units[i, c]] += 1


def _balance(  # noqa: PLR0917  (numba compiles positional arguments only)
    units: Any,
    planned: Any,
    winners: Any,
    kinds: Any,
    want_l: Any,
    want_b: Any,
    cell_class: Any,
    deficit: Any,
    bonus_cells: Any,
    lines: Any,
    groups: Any,
    buf: Any,
    st: Any,
    max_proposals: int,
) -> int:
    """Change free cells of winning units towards the symbols ``deficit[class]`` lacks (> 0)
    and away from those in surplus (< 0), keeping each unit's plan; returns proposals left
    (-1 if the buffer ran dry)."""
    masks = np.empty(6, dtype=np.int64)
    counts = np.empty(6, dtype=np.int64)
    cells = np.empty(64, dtype=np.int8)
    left = max_proposals
    while left > 0:
        done = True
        for k in range(deficit.shape[0]):
            for s in range(6):
                if deficit[k, s] < -0.5:
                    done = False
        if done:
            return left
        left -= 1
        w = winners[_below(buf, st, winners.shape[0])]
        c = _below(buf, st, 64)
        if st[1]:
            return -1
        if planned[w, c]:
            continue
        k = cell_class[c]
        a = units[w, c]
        if deficit[k, a] >= -0.5:
            continue
        total = 0.0
        for s in range(6):
            if deficit[k, s] > 0.5:
                total += deficit[k, s]
        if total <= 0.0:
            deficit[k, a] = 0.0
            continue
        u = (float(_word(buf, st) >> np.uint64(11)) * (1.0 / 9007199254740992.0)) * total
        if st[1]:
            return -1
        b = -1
        for s in range(6):
            if deficit[k, s] > 0.5:
                b = s
                u -= deficit[k, s]
                if u < 0.0:
                    break
        for t in range(64):
            cells[t] = units[w, t]
        cells[c] = b
        kind = kinds[w]
        if _bonus_ok(cells, want_b[kind], bonus_cells, groups, masks) and _lines_ok(
            cells, want_l[kind], lines, masks, counts
        ):
            units[w, c] = b
            deficit[k, a] += 1.0
            deficit[k, b] -= 1.0
    return 0


_word = numba.njit(inline="always")(_word)
_below = numba.njit(inline="always")(_below)
_bonus_ok = numba.njit(inline="always")(_bonus_ok)
_lines_ok = numba.njit(inline="always")(_lines_ok)
_fill = numba.njit(inline="always")(_fill)
draw_units = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_draw_units))
count_symbols = cast(Callable[..., None], numba.njit(cache=True, nogil=True)(_count_symbols))
balance_kernel = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_balance))


def new_state() -> Any:
    """A kernel's position in its random buffer (see _STATE)."""
    return np.zeros(_STATE, dtype=np.int64)
