"""Compiled loops of the layout, the balancing and the sale order (numba), one unit at a time.

Randomness comes in as buffers of 64-bit words: ChaCha20 keystreams of the HKDF sub-keys for the
layout and the balancing, SHAKE-256 for the sale order. A kernel consumes them in order and
stops, reporting where, when one runs dry, so the caller refills and calls again: the result
depends only on the keys. Cells are drawn in pairs: a 16-bit chunk of a word below 65,520 =
36 × 1,820, taken modulo 36, is two uniform symbols (a word with a chunk above is drawn again);
a single symbol is a byte below 252 = 42 × 6, taken modulo 6 (other bytes are skipped); an
index below m is Lemire's multiply-and-reject on 32 random bits. All exactly uniform.

Each unit is judged here with the game core's mask tables (pharaon.game.tables: full lines and
bonus groups per symbol) and its bit-plane helpers; the block is judged again, unit by unit, by
pharaon.game.batch when it is verified.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Final, cast

import numba
import numpy as np
from numba.core import cgutils
from numba.extending import intrinsic

from pharaon.game.batch import bit_plane, symbol_masks

_ir: Any = importlib.import_module("llvmlite.ir")  # numba's LLVM binding: no type information
_function: Any = cgutils.get_or_insert_function

BYTE_SYMBOL: Final = np.where(np.arange(256) < 252, np.arange(256) % 6, -1).astype(np.int8)
"""(256,) int8: the symbol a random byte stands for, -1 for the four bytes that are skipped."""
_CHUNKS: Final = np.arange(1 << 16)
_SKIP: Final = 0xFFFF
PAIR_SYMBOLS: Final = np.where(
    _CHUNKS < 65_520, (_CHUNKS % 36 % 6) | ((_CHUNKS % 36 // 6) << 8), _SKIP
).astype(np.uint16)
"""(65536,) uint16: the two symbols (low byte first) a random 16-bit chunk stands for (the
chunk modulo 36), 0xFFFF for the 16 chunks from 65,520 = 36 × 1,820 up, which are skipped."""
_CHUNK: Final = np.uint64(0xFFFF)
_LOW32: Final = np.uint64(0xFFFFFFFF)
_TWO32: Final = np.uint64(1 << 32)
_SIXTEEN: Final = np.uint64(16)
_THIRTY_TWO: Final = np.uint64(32)
_FORTY_EIGHT: Final = np.uint64(48)
_BYTE: Final = np.uint64(0xFF)
_EIGHT: Final = np.uint64(8)
_QUICK_DRAWS: Final = 8
FILL_ORDER: Final = (1, 3, 4, 6, 0, 2, 5, 7)
"""The words of a unit's cells in the order they are drawn: first the four that hold the bonus
grid (grid 1's rows 3-4, grid 2's rows 3-4, grid 3's rows 1-2, grid 4's rows 1-2), then the
others."""
_STATE: Final = 6
"""[position, exhausted, current word, bytes left in it, attempts at this unit, winner index]"""


def _word(buf: Any, st: Any) -> Any:
    pos = st[0]
    if pos >= buf.shape[0]:
        st[1] = 1
        return np.uint64(0)
    st[0] = pos + 1
    return buf[pos]


def _below(buf: Any, st: Any, m: int) -> Any:
    """A uniform integer in 0..m-1 (m < 2^32): Lemire's multiply-and-reject on the high 32 bits
    of a word, a division only in the rare case where a rejection is possible."""
    mm = np.uint64(m)
    while True:
        r = _word(buf, st)
        if st[1]:
            return np.int64(0)
        product = (r >> _THIRTY_TWO) * mm
        low = product & _LOW32
        if low >= mm or low >= (_TWO32 - mm) % mm:
            return np.int64(product >> _THIRTY_TWO)


def _uniform(buf: Any, st: Any) -> float:
    """A uniform float in [0, 1) (53 bits)."""
    return float(_word(buf, st) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def _bonus_ok(cells: Any, want_b: Any, bonus_cells: Any, groups: Any, masks: Any) -> bool:
    """Whether the bonus grid holds exactly ``want_b`` groups of 4 per symbol and none of 5 or
    more (``groups``: pharaon.game.tables.bonus_table); ``masks`` (6,) gets its symbol masks."""
    p0 = 0
    p1 = 0
    p2 = 0
    for p in range(16):
        v = int(cells[bonus_cells[p]])
        p0 |= (v & 1) << p
        p1 |= ((v >> 1) & 1) << p
        p2 |= (v >> 2) << p
    m = symbol_masks(p0, p1, p2)
    ok = True
    for s in range(6):
        masks[s] = m[s]
        if groups[m[s]] != want_b[s]:  # -1 (a group of 5 or more) never matches
            ok = False
    return ok


def _shows_three(masks: Any, threes: Any, look_symbols: int) -> int:
    """1 if the bonus grid (``masks``: its (6,) symbol masks) shows a group of exactly three
    cells in contact of one of ``look_symbols`` (a bit per symbol), else 0 (``threes``:
    pharaon.pool.layout.three_table)."""
    for s in range(6):
        if (look_symbols >> s) & 1 and threes[masks[s]]:
            return 1
    return 0


def _grid_masks(words: Any, masks: Any) -> None:
    """``masks`` (4, 6) ← each grid's 16-bit mask of each symbol (``words``: the unit's 64
    cells as eight int64, two per grid)."""
    for g in range(4):
        a = words[2 * g]
        b = words[2 * g + 1]
        m = symbol_masks(
            bit_plane(a, 0) | (bit_plane(b, 0) << 8),
            bit_plane(a, 1) | (bit_plane(b, 1) << 8),
            bit_plane(a, 2) | (bit_plane(b, 2) << 8),
        )
        for s in range(6):
            masks[g, s] = m[s]


def _lines_ok(words: Any, want_l: Any, lines: Any, masks: Any) -> bool:
    """Whether the grids hold exactly ``want_l`` full lines per symbol (``lines``:
    pharaon.game.tables.line_table); ``masks`` (4, 6) gets each grid's symbol masks."""
    _grid_masks(words, masks)
    for s in range(6):
        count = 0
        for g in range(4):
            count += lines[masks[g, s]]
        if count != want_l[s]:
            return False
    return True


def _any_line(words: Any) -> bool:
    """Whether some line of some grid holds one symbol four times, byte arithmetic on the
    rows (a losing unit's test: cheaper than counting lines per symbol)."""
    for g in range(4):
        a = words[2 * g]  # rows 1 and 2 of the grid, four bytes each
        b = words[2 * g + 1]  # rows 3 and 4
        for x in (a, b):
            y = x ^ (x >> 8)  # byte k: cell k against cell k + 1
            if (y & 0xFFFFFF) == 0 or (y & 0xFFFFFF00000000) == 0:
                return True
        r0 = a & 0xFFFFFFFF
        r1 = (a >> 32) & 0xFFFFFFFF
        r2 = b & 0xFFFFFFFF
        r3 = (b >> 32) & 0xFFFFFFFF
        e = (r0 ^ r1) | (r1 ^ r2) | (r2 ^ r3)  # a zero byte: a column of one symbol
        if ((e - 0x01010101) & ~e & 0x80808080) != 0:
            return True
        d = r0 & 0xFF
        if d == (r1 >> 8) & 0xFF and d == (r2 >> 16) & 0xFF and d == r3 >> 24:
            return True
        d = r0 >> 24
        if d == (r1 >> 16) & 0xFF and d == (r2 >> 8) & 0xFF and d == r3 & 0xFF:
            return True
    return False


def _popcount_intrinsic(typingctx: Any, x: Any) -> Any:
    """The number of bits set in an int64 (LLVM's ctpop: one POPCNT instruction on x86)."""
    del typingctx
    signature = numba.types.int64(x)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        del context, sig
        i64 = _ir.IntType(64)
        ctpop = _function(builder.module, _ir.FunctionType(i64, [i64]), "llvm.ctpop.i64")
        return builder.call(ctpop, [args[0]])

    return signature, codegen


_popcount: Any = intrinsic(_popcount_intrinsic)


def _fill(words: Any, half: int, buf: Any, st: Any, pair_symbols: Any) -> None:
    """Draw half of the 64 cells (``words``: (8,) int64, eight cells each) uniformly: the four
    words of FILL_ORDER[4 * half:], four pairs of symbols from each random word, drawn again
    if one of its four 16-bit chunks is skipped. Half 0 holds the bonus grid: a unit whose
    bonus grid fails is drawn again before the other half is drawn. (The buffer position is
    kept in a local: through ``st`` it would cost a store and a load per word.)"""
    pos = st[0]
    end = buf.shape[0]
    for i in range(4 * half, 4 * half + 4):
        w = FILL_ORDER[i]
        while True:
            if pos >= end:
                st[0] = pos
                st[1] = 1
                return
            word = buf[pos]
            pos += 1
            a = np.int64(pair_symbols[word & _CHUNK])
            b = np.int64(pair_symbols[(word >> _SIXTEEN) & _CHUNK])
            c = np.int64(pair_symbols[(word >> _THIRTY_TWO) & _CHUNK])
            d = np.int64(pair_symbols[word >> _FORTY_EIGHT])
            if a != _SKIP and b != _SKIP and c != _SKIP and d != _SKIP:  # noqa: PLR1714
                break
        words[w] = a | (b << 16) | (c << 32) | (d << 48)
    st[0] = pos


def _symbol(buf: Any, st: Any, byte_symbol: Any) -> Any:
    """One uniform symbol from the bytes left in st[2] (st[3] of them), or a new word."""
    while True:
        if st[3] == 0:
            word = _word(buf, st)
            if st[1]:
                return np.int8(0)
            st[3] = 8
        else:
            word = np.uint64(st[2])
        s = byte_symbol[word & _BYTE]
        st[2] = np.int64(word >> _EIGHT)  # below 2^56
        st[3] -= 1
        if s >= 0:
            return s


def _fits(  # noqa: PLR0917  (numba compiles positional arguments only)
    idx: int,
    group: bool,
    own: int,
    other: int,
    forbidden: int,
    line_masks: Any,
    tet_masks: Any,
    nbr_masks: Any,
) -> bool:
    """Whether line or placement ``idx`` clashes with nothing placed: no other symbol on its
    cells, not all of them already its own, none where the symbol is forbidden, and for a group
    no cell of its own symbol in contact."""
    m = tet_masks[idx] if group else line_masks[idx]
    return (
        (m & other) == 0
        and (m & ~own) != 0
        and (m & forbidden) == 0
        and not (group and (nbr_masks[idx] & own) != 0)
    )


def _place(  # noqa: PLR0917  (numba compiles positional arguments only)
    k: int,
    pieces: Any,
    n_pieces: Any,
    line_masks: Any,
    tet_masks: Any,
    nbr_masks: Any,
    buf: Any,
    st: Any,
    occupied: Any,
    forbidden: Any,
    chosen: Any,
    candidates: Any,
) -> bool:
    """Place plan ``k``'s pieces at random places: ``chosen[j]`` the line or placement of piece
    j, ``occupied[s]`` (s < 6) the cells of symbol s and ``occupied[6]`` all of them,
    ``forbidden[s]`` the cells touching a group of s (64-bit masks).

    Each piece goes to a place drawn uniformly among those that do not clash with the pieces
    already placed (_fits): a few uniform draws, the first that fits kept, else a draw among
    all that fit (either way uniform among them). False if there is none (or the buffer ran
    dry: st[1])."""
    for s in range(7):
        occupied[s] = 0
        forbidden[s] = 0
    for j in range(n_pieces[k]):
        sym = pieces[k, j, 0]
        group = pieces[k, j, 1] == 1
        places = 113 if group else 40
        own = occupied[sym]
        other = occupied[6] & ~own
        idx = -1
        for _ in range(_QUICK_DRAWS):  # mostly enough: a few uniform draws, kept if free
            i = _below(buf, st, places)
            if st[1]:
                return False
            if _fits(i, group, own, other, forbidden[sym], line_masks, tet_masks, nbr_masks):
                idx = i
                break
        if idx < 0:  # crowded: a uniform draw among the places that fit
            count = 0
            for i in range(places):
                if _fits(i, group, own, other, forbidden[sym], line_masks, tet_masks, nbr_masks):
                    candidates[count] = i
                    count += 1
            if count == 0:
                return False
            idx = candidates[_below(buf, st, count)]
            if st[1]:
                return False
        chosen[j] = idx
        m = tet_masks[idx] if group else line_masks[idx]
        occupied[sym] = own | m
        occupied[6] |= m
        if group:
            forbidden[sym] |= nbr_masks[idx]
    return True


def _set_pieces(  # noqa: PLR0917  (numba compiles positional arguments only)
    cells: Any, k: int, m: int, pieces: Any, chosen: Any, tet_cells: Any, line_cells: Any
) -> None:
    """Write plan ``k``'s ``m`` pieces at their places ``chosen`` into ``cells``."""
    for j in range(m):
        group = pieces[k, j, 1] == 1
        for t in range(4):
            c = tet_cells[chosen[j], t] if group else line_cells[chosen[j], t]
            cells[c] = pieces[k, j, 0]


def _draw_units(  # noqa: PLR0917  (numba compiles positional arguments only)
    kinds: Any,
    first_row: int,
    start: int,
    pieces: Any,
    n_pieces: Any,
    want_l: Any,
    want_b: Any,
    line_cells: Any,
    tet_cells: Any,
    line_masks: Any,
    tet_masks: Any,
    nbr_masks: Any,
    nbr_lists: Any,
    bonus_cells: Any,
    lines: Any,
    groups: Any,
    threes: Any,
    look_symbols: int,
    look: Any,
    pair_symbols: Any,
    byte_symbol: Any,
    layout_buf: Any,
    layout_st: Any,
    fill_buf: Any,
    fill_st: Any,
    max_attempts: int,
    units: Any,
    planned: Any,
    free: Any,
) -> Any:
    """Draw units ``start..`` until done (returns n), a buffer runs dry (returns the first unit
    not drawn) or a unit fails ``max_attempts`` times (returns -1 - its index).

    Unit ``i`` goes to row ``first_row + i`` of ``units`` ((n, 8) int64: the (n, 64) int8
    cells) and ``planned`` (a bit per planned cell);
    ``free[winning, cell class, symbol]`` counts the cells outside planned combinations.
    ``pieces[k, j]`` = (symbol, is_group) of plan k's j-th piece, groups first.
    ``look[i]``: 1 if unit i must show three cells in contact in the bonus grid (_shows_three),
    0 if it must not, -1 if either will do.
    """
    n = kinds.shape[0]
    occupied = np.zeros(7, dtype=np.int64)
    forbidden = np.zeros(7, dtype=np.int64)
    chosen = np.zeros(max(1, pieces.shape[1]), dtype=np.int64)
    candidates = np.empty(tet_masks.shape[0], dtype=np.int64)
    words = np.empty(8, dtype=np.int64)
    cells = words.view(np.int8)
    bonus_masks = np.empty(6, dtype=np.int64)
    grid_masks = np.empty((4, 6), dtype=np.int64)
    for i in range(start, n):
        k = kinds[i]
        m = n_pieces[k]
        while True:
            # Attempts at this unit, counted across calls (a call may stop for more words).
            layout_st[4] += 1
            if layout_st[4] > max_attempts:
                return -1 - i
            if m > 0:
                placed = _place(
                    k, pieces, n_pieces, line_masks, tet_masks, nbr_masks, layout_buf,
                    layout_st, occupied, forbidden, chosen, candidates,
                )  # fmt: skip
                if layout_st[1]:
                    return i
                if not placed:
                    continue
            _fill(words, 0, fill_buf, fill_st, pair_symbols)  # the bonus grid's half
            if fill_st[1]:
                return i
            _set_pieces(cells, k, m, pieces, chosen, tet_cells, line_cells)
            for j in range(m):  # the cells touching a group
                if pieces[k, j, 1] != 1:
                    continue
                for t in range(nbr_lists.shape[1]):
                    c = nbr_lists[chosen[j], t]
                    if c < 0:
                        break
                    if (occupied[6] >> c) & 1:
                        continue
                    bad = 0  # the symbols forbidden at c: drawn again (uniform among the others)
                    for s in range(6):
                        bad |= ((forbidden[s] >> c) & 1) << s
                    while (bad >> cells[c]) & 1:
                        cells[c] = _symbol(fill_buf, fill_st, byte_symbol)
                        if fill_st[1]:
                            return i
            if not _bonus_ok(cells, want_b[k], bonus_cells, groups, bonus_masks):
                continue
            if look[i] >= 0 and _shows_three(bonus_masks, threes, look_symbols) != look[i]:
                continue
            _fill(words, 1, fill_buf, fill_st, pair_symbols)  # the other half
            if fill_st[1]:
                return i
            _set_pieces(cells, k, m, pieces, chosen, tet_cells, line_cells)
            if m == 0:
                if not _any_line(words):
                    _grid_masks(words, grid_masks)  # for the symbol counts below
                    break
            elif _lines_ok(words, want_l[k], lines, grid_masks):
                break
        layout_st[4] = 0
        row = first_row + i
        bits = occupied[6] if m > 0 else 0
        bonus_free = 0xFFFF
        if m > 0:
            for p in range(16):
                if (bits >> bonus_cells[p]) & 1:
                    bonus_free &= ~(1 << p)
        for w in range(8):
            units[row, w] = words[w]
        planned[row] = bits
        w = 0 if m == 0 else 1
        for s in range(6):
            in_bonus = _popcount(bonus_masks[s] & bonus_free)
            total = 0
            for g in range(4):
                total += _popcount(grid_masks[g, s] & ~(bits >> (16 * g)) & 0xFFFF)
            free[w, 0, s] += in_bonus  # cell class 0: the bonus grid
            free[w, 1, s] += total - in_bonus
    return n


def _grid_mask(units: Any, w: int, first: int, cells: Any, s: int) -> int:
    """The 16-bit mask of symbol ``s`` over cells ``cells[first:first + 16]`` of unit ``w``."""
    m = 0
    for t in range(16):
        if units[w, cells[first + t]] == s:
            m |= 1 << t
    return m


def _change_keeps_plan(  # noqa: PLR0917  (numba compiles positional arguments only)
    units: Any,
    w: int,
    c: int,
    b: int,
    grid_cells: Any,
    bonus_cells: Any,
    bonus_position: Any,
    lines: Any,
    groups: Any,
    threes: Any,
    look_symbols: int,
) -> bool:
    """Whether unit ``w`` (holding exactly its plan) still does with cell ``c`` set to ``b``,
    and shows the same look (three cells in contact in the bonus grid, or not).

    Only the masks of the old and the new symbol change, in ``c``'s grid and, for a bonus cell,
    in the bonus grid: the unit keeps its plan if their line and group counts stay the same.
    """
    a = units[w, c]
    g = c // 16
    bit = 1 << (c % 16)
    ma = _grid_mask(units, w, 16 * g, grid_cells, a)
    mb = _grid_mask(units, w, 16 * g, grid_cells, b)
    if lines[ma & ~bit] != lines[ma] or lines[mb | bit] != lines[mb]:
        return False
    p = bonus_position[c]
    if p < 0:
        return True
    bit = 1 << p
    ma = _grid_mask(units, w, 0, bonus_cells, a)
    mb = _grid_mask(units, w, 0, bonus_cells, b)
    if groups[ma & ~bit] != groups[ma] or groups[mb | bit] != groups[mb]:
        return False
    before = False
    after = False
    for s in range(6):
        if not (look_symbols >> s) & 1:
            continue
        m = ma if s == a else mb if s == b else _grid_mask(units, w, 0, bonus_cells, s)
        before = before or threes[m]
        after = after or threes[m & ~bit if s == a else m | bit if s == b else m]
    return before == after


def _pick(weights: Any, k: int, u: float) -> int:
    """A symbol s with ``weights[k, s]`` > 0.5, drawn in proportion to it (``u`` uniform in
    [0, 1)); -1 if there is none."""
    total = 0.0
    for s in range(6):
        v = weights[k, s]
        if v > 0.5:
            total += v
    u *= total
    last = -1
    for s in range(6):
        v = weights[k, s]
        if v > 0.5:
            last = s
            u -= v
            if u < 0.0:
                return s
    return last


def _balance(  # noqa: PLR0917  (numba compiles positional arguments only)
    units: Any,
    planned: Any,
    winners: Any,
    cell_class: Any,
    deficit: Any,
    grid_cells: Any,
    bonus_cells: Any,
    bonus_position: Any,
    lines: Any,
    groups: Any,
    threes: Any,
    look_symbols: int,
    buf: Any,
    st: Any,
    rate: float,
) -> int:
    """Change free cells of winning units towards the symbols ``deficit[class]`` lacks (> 0)
    and away from those in surplus (< 0), keeping each unit's plan.

    Winners are visited in order (st[5] is the next one); each is picked with probability
    ``rate``; a picked unit gets a (class, surplus symbol) in proportion to the surplus, one of
    its free cells of that class holding that symbol at random, and a new symbol in proportion
    to the deficit. Returns 1 when nothing is in surplus, 0 at the end of the pass, -1 if the
    buffer ran dry (call again with a new buffer and the same ``st[5]``).
    """
    limit = np.uint64(min(rate, 1.0) * 18446744073709549568.0)
    for j in range(st[5], winners.shape[0]):
        st[5] = j
        coin = _word(buf, st)
        if st[1]:
            return -1
        if coin >= limit:
            continue
        # (class, symbol) in surplus, in proportion to the surplus
        total = 0.0
        for k in range(2):
            for s in range(6):
                if deficit[k, s] < -0.5:
                    total -= deficit[k, s]
        if total <= 0.0:
            return 1
        u = _uniform(buf, st) * total
        kk = 1
        a = -1
        for k in range(2):
            for s in range(6):
                if a < 0 and deficit[k, s] < -0.5:
                    u += deficit[k, s]
                    if u < 0.0:
                        kk = k
                        a = s
        if a < 0:  # rounding: the last one in surplus
            for k in range(2):
                for s in range(6):
                    if deficit[k, s] < -0.5:
                        kk = k
                        a = s
        w = winners[j]
        bits = planned[w]
        count = 0
        for c in range(64):
            if cell_class[c] == kk and units[w, c] == a and not (bits >> c) & 1:
                count += 1
        if count == 0:
            continue
        r = _below(buf, st, count)
        b = _pick(deficit, kk, _uniform(buf, st))
        if st[1]:
            return -1
        if b < 0:
            deficit[kk, a] = 0.0  # no symbol of the class lacks anything
            continue
        c = 0
        for t in range(64):
            if cell_class[t] == kk and units[w, t] == a and not (bits >> t) & 1:
                if r == 0:
                    c = t
                    break
                r -= 1
        if _change_keeps_plan(
            units,
            w,
            c,
            b,
            grid_cells,
            bonus_cells,
            bonus_position,
            lines,
            groups,
            threes,
            look_symbols,
        ):
            units[w, c] = b
            deficit[kk, a] += 1.0
            deficit[kk, b] -= 1.0
    st[5] = winners.shape[0]
    return 0


def _shuffle(words: Any, out: Any) -> int:
    """Fisher-Yates: ``out`` (n,) int64 becomes a uniform permutation of 0..n-1, from the
    uniform 32-bit ``words`` (Lemire's multiply-and-reject for each index). Returns the words
    used, or -1 if there were too few."""
    n = out.shape[0]
    for i in range(n):
        out[i] = i
    pos = 0
    for i in range(n - 1, 0, -1):
        s = np.uint64(i + 1)
        while True:
            if pos >= words.shape[0]:
                return -1
            m = np.uint64(words[pos]) * s
            pos += 1
            low = m & np.uint64(0xFFFFFFFF)
            if low >= s or low >= (np.uint64(1 << 32) - s) % s:
                break
        j = np.int64(m >> np.uint64(32))
        t = out[i]
        out[i] = out[j]
        out[j] = t
    return pos


_word = numba.njit(inline="always")(_word)
_below = numba.njit(inline="always")(_below)
_uniform = numba.njit(inline="always")(_uniform)
_bonus_ok = numba.njit(inline="always")(_bonus_ok)
_grid_masks = numba.njit(inline="always")(_grid_masks)
_shows_three = numba.njit(inline="always")(_shows_three)
_lines_ok = numba.njit(inline="always")(_lines_ok)
_any_line = numba.njit(inline="always")(_any_line)
_fill = numba.njit(inline="always")(_fill)
_set_pieces = numba.njit(inline="always")(_set_pieces)
_symbol = numba.njit(inline="always")(_symbol)
_fits = numba.njit(inline="always")(_fits)
_place = numba.njit(inline="always")(_place)
_grid_mask = numba.njit(inline="always")(_grid_mask)
_change_keeps_plan = numba.njit(inline="always")(_change_keeps_plan)
_pick = numba.njit(inline="always")(_pick)
draw_units = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_draw_units))
balance_kernel = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_balance))
shuffle = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_shuffle))


def new_state() -> Any:
    """A kernel's position in its random buffer (see _STATE)."""
    return np.zeros(_STATE, dtype=np.int64)
