"""The auditor: re-evaluates every unit of a block and checks it against its manifest.

Nothing of the generator's bookkeeping is trusted: lots, combinations and compositions come from
the batch evaluator (pharaon.game.batch), then the prize table, the cumulation rule, the
manifest's counts, the SHA-256 of the units and the Merkle root are checked. A regulation block
is checked against the rules' prize table; a test block against its own manifest's table (same
amounts, smaller counts).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from pharaon.game.batch import SYMBOLS, BatchResult, evaluate_batch
from pharaon.game.money import format_cents
from pharaon.game.rules import rules
from pharaon.pool.blockfile import (
    Block,
    BlockFileError,
    Manifest,
    first_mismatch,
    read_block,
    ticket_bytes,
    units_sha256,
)
from pharaon.pool.layout import Progress
from pharaon.pool.merkle import leaf_hashes, merkle_root

_MAX_PROBLEMS = 10


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """``ok`` with a one-line ``summary``, or the first ``problems`` found."""

    ok: bool
    problems: list[str]
    summary: str


def _serials(mask: NDArray[np.bool_], limit: int = 3) -> str:
    found = np.flatnonzero(mask)[:limit] + 1
    more = ", …" if int(mask.sum()) > limit else ""
    return ", ".join(str(s) for s in found) + more


def _packed_compositions(
    line_counts: NDArray[np.int8], bonus_counts: NDArray[np.int8]
) -> NDArray[np.int64]:
    """(n,) int64: each unit's line and bonus counts per symbol, (n, 6) each, as one number."""
    code = np.zeros(line_counts.shape[0], dtype=np.int64)
    for s in range(SYMBOLS):  # in place: no temporary array per step
        code *= 64
        code += line_counts[:, s]
    for s in range(SYMBOLS):
        code *= 8
        code += bonus_counts[:, s]
    return code


def _composition_name(packed: int) -> str:
    """``'L:<line codes> B:<bonus codes>'`` of a packed composition."""
    codes = rules().symbol_codes
    rest = packed
    b = [0] * SYMBOLS
    ln = [0] * SYMBOLS
    for s in reversed(range(SYMBOLS)):
        rest, b[s] = divmod(rest, 8)
    for s in reversed(range(SYMBOLS)):
        rest, ln[s] = divmod(rest, 64)
    line_codes = "".join(codes[s] * ln[s] for s in range(SYMBOLS))
    bonus_codes = "".join(codes[s] * b[s] for s in range(SYMBOLS))
    return f"L:{line_codes} B:{bonus_codes}"


def composition_keys(result: BatchResult) -> list[str]:
    """Per unit, the composition the evaluator sees: ``'L:<line codes> B:<bonus codes>'``."""
    unique, inverse = np.unique(
        _packed_compositions(result.line_counts, result.bonus_counts), return_inverse=True
    )
    names = [_composition_name(packed) for packed in unique.tolist()]
    return [names[i] for i in inverse.tolist()]


def _check_identity(m: Manifest, n: int, problems: list[str]) -> bool:
    game = rules()
    if m.game != game.name:
        problems.append(f"manifest: game is {m.game!r}, expected {game.name!r}")
    if m.price_cents not in game.prices_cents:
        problems.append(f"manifest: price_cents must be 100, 200 or 300, got {m.price_cents}")
        return False
    if not m.test and m.block_size != game.block_size:
        problems.append(
            f"manifest: a regulation block holds {game.block_size} units, this one {m.block_size}"
        )
    if n != m.block_size:
        problems.append(f"the block holds {n} units, the manifest says {m.block_size}")
    return True


def _check_table(m: Manifest, lots: NDArray[np.int64], problems: list[str]) -> None:
    game = rules()
    official = game.prize_table(m.price_cents)
    if m.test:
        want = {t.amount_cents: t for t in m.prize_table}
        flags = {t.amount_cents: t.cumulation_only for t in official}
        if {a: t.cumulation_only for a, t in want.items()} != flags:
            problems.append("manifest: the test prize table's amounts differ from the rules'")
    else:
        want = {t.amount_cents: t for t in official}
        if tuple(m.prize_table) != official:
            problems.append("manifest: prize_table differs from the regulation's")
    amounts, counts = np.unique(lots[lots > 0], return_counts=True)
    have = dict(zip(amounts.tolist(), counts.tolist(), strict=True))
    for amount in sorted(set(want) | set(have), reverse=True):
        expected = want[amount].lots if amount in want else 0
        got = have.get(amount, 0)
        if got != expected:
            problems.append(
                f"prize table: {got} units win {format_cents(amount)}, the table says {expected}"
            )


def verify_block(
    path_or_block: Block | Path | str, *, progress: Progress | None = None
) -> VerifyReport:
    """Check a block file (or a :class:`Block` in memory) from scratch."""

    def step(done: int) -> None:
        if progress is not None:
            progress("verify", done, 4)

    problems: list[str] = []
    if isinstance(path_or_block, Block):
        block = path_or_block
    else:
        try:
            block = read_block(path_or_block)
        except BlockFileError as exc:
            return VerifyReport(False, [str(exc)], f"FAILED: {exc}")
    step(1)
    m = block.manifest
    n = block.size
    if not _check_identity(m, n, problems):
        return _report(problems, m)
    # The hashes are over the ticket strings, the evaluation over the units: a block in memory
    # that carries both (made by the generator) must have them agree.
    tickets = block.tickets if block.tickets is not None else ticket_bytes(block.units)
    # hashlib, the hashing kernels and the numba evaluator release the GIL: hash and compare
    # while evaluating.
    with ThreadPoolExecutor(max_workers=2) as pool:
        digest = pool.submit(units_sha256, tickets)
        root = pool.submit(lambda: merkle_root(leaf_hashes(tickets, block.lots_cents)))
        # read_block decodes the units from the tickets: they agree by construction
        compare = block.tickets is not None and isinstance(path_or_block, Block)
        agree = pool.submit(lambda: first_mismatch(block.units, tickets) if compare else -1)
        result = evaluate_batch(block.units, m.price_cents, threads=2)
        units_digest = digest.result()
        merkle = root.result()
        mismatch = agree.result()
    if mismatch >= 0:
        problems.append(f"unit {mismatch + 1}: the cells differ from the ticket string")
    _check_evaluation(m, result, block.lots_cents, problems)
    step(2)
    if units_digest != m.units_sha256:
        problems.append("units_sha256 does not match the units")
    step(3)
    if merkle != m.merkle_root:
        problems.append("merkle_root does not match the units")
    step(4)
    return _report(problems, m, result.lots_cents)


def audit_units(m: Manifest, units: NDArray[np.int8], lots_cents: NDArray[np.int64]) -> list[str]:
    """The first problems the evaluator finds in ``units`` ((n, 64) int8) with their
    ``lots_cents`` ((n,)) against manifest ``m``: everything :func:`verify_block` checks but
    the hashes. The generator's self-verification (nothing of its bookkeeping is used)."""
    problems: list[str] = []
    if _check_identity(m, units.shape[0], problems):
        result = evaluate_batch(units, m.price_cents, threads=2)
        _check_evaluation(m, result, lots_cents, problems)
    return problems[:_MAX_PROBLEMS]


def _check_evaluation(
    m: Manifest, result: BatchResult, lots_cents: NDArray[np.int64], problems: list[str]
) -> None:
    """Malformed units, lots, the prize table, the cumulation rule, the compositions."""
    bad = result.malformed
    if bad.any():
        problems.append(
            f"{int(bad.sum())} malformed units (bonus group of 5 or more), serials {_serials(bad)}"
        )
    differ = result.lots_cents != lots_cents
    if differ.any():
        i = int(np.argmax(differ))
        problems.append(
            f"{int(differ.sum())} units' prize_cents differ from their evaluation, serials "
            f"{_serials(differ)} (serial {i + 1}: file {int(lots_cents[i])}, "
            f"evaluator {int(result.lots_cents[i])})"
        )
    _check_table(m, result.lots_cents, problems)
    game = rules()
    cumulation = [t.amount_cents for t in game.prize_table(m.price_cents) if t.cumulation_only]
    single = np.isin(result.lots_cents, cumulation) & (result.combinations < 2)
    if single.any():
        problems.append(
            f"{int(single.sum())} units win a cumulation-only amount with one combination, "
            f"serials {_serials(single)}"
        )
    _check_compositions(m, result, problems)


def _check_compositions(m: Manifest, result: BatchResult, problems: list[str]) -> None:
    winning = result.lots_cents > 0
    all_codes = _packed_compositions(result.line_counts, result.bonus_counts)
    loser_combos = ~winning & (all_codes != 0)
    if loser_combos.any():
        problems.append(
            f"{int(loser_combos.sum())} losing units hold a line or bonus group, serials "
            f"{_serials(loser_combos)}"
        )
    # Count (composition, lot) pairs with numpy; only the distinct ones get a name.
    # A packed composition is below 2**54, so (composition, lot index) packs into one int64.
    amounts, lot_index = np.unique(result.lots_cents[winning], return_inverse=True)
    codes = all_codes[winning]
    packed = codes * 64 + lot_index
    unique, counts = np.unique(packed, return_counts=True)
    have = Counter(
        {
            (_composition_name(key // 64), int(amounts[key % 64])): count
            for key, count in zip(unique.tolist(), counts.tolist(), strict=True)
        }
    )
    want = Counter({(c.key, c.amount_cents): c.count for c in m.counts})
    for key in sorted(set(have) | set(want)):
        if have[key] != want[key]:
            name, amount = key
            problems.append(
                f"composition {name} at {format_cents(amount)}: {have[key]} units, the manifest "
                f"says {want[key]}"
            )


def _report(
    problems: list[str], m: Manifest, lots: NDArray[np.int64] | None = None
) -> VerifyReport:
    if problems:
        shown = problems[:_MAX_PROBLEMS]
        more = f" (+{len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
        return VerifyReport(False, shown, f"FAILED: {shown[0]}{more}")
    assert lots is not None  # no problem means every check ran
    total = int(lots.sum())
    winners = int((lots > 0).sum())
    kind = "test block" if m.test else "block"
    summary = (
        f"OK: {kind} {m.emission}/{m.block_number} at {format_cents(m.price_cents)}, "
        f"{m.block_size:,} units, {winners:,} winning, {format_cents(total)} of lots, "
        f"merkle root {m.merkle_root[:16]}…"
    )
    return VerifyReport(True, [], summary)
