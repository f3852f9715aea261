"""The block factory: a block of units carrying exactly its design's prize table, in a sale
order nobody can predict.

1. Each unit gets a kind from the design (a composition, or losing), in design order; the kinds
   are put in sale order by a permutation from the HKDF order sub-key (SHAKE-256).
2. :func:`pharaon.pool.layout.lay_out` draws every unit in sale order: fill, combinations at
   random places, the game core's tables as judge (layout and fill from ChaCha20 streams of
   HKDF sub-keys), each unit with the look its own coin gave it (three cells in contact in the
   bonus grid or not: the same odds for every unit, those of a losing unit left to itself);
   :func:`pharaon.pool.balance.balance` evens out the background.
3. The manifest records the design, the prize table, the counts, the SHA-256 of the units and
   the Merkle root over them.
4. Self-verification: :func:`pharaon.pool.verify.audit_units` re-evaluates every unit with the
   game core's evaluator and checks the prize table, the cumulation rule and the counts (while
   the hashes are computed from the same units); a block that fails is never returned.
   ``pharaon verify`` later checks the file from scratch, hashes included.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Final

import numpy as np

from pharaon import __version__
from pharaon.game.rules import rules
from pharaon.pool.balance import balance
from pharaon.pool.blockfile import (
    Block,
    CompositionCount,
    Manifest,
    ticket_bytes,
    units_sha256,
)
from pharaon.pool.design import Design, canonical, default_design
from pharaon.pool.keys import SeedKeyError, commitment, new_key, parse_key
from pharaon.pool.layout import Plan, Progress, lay_out, looks
from pharaon.pool.merkle import leaf_hashes, merkle_root
from pharaon.pool.seeding import derive_keys, secure_permutation
from pharaon.pool.verify import audit_units

GENERATOR_VERSION: Final = f"pharaon {__version__} (layout 4)"


class SelfVerificationError(ValueError):
    """A generated block that the evaluator refuses: a bug of the generator or its design."""


_EMISSION: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _key(value: bytes | str | None, who: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return parse_key(value, who)


def check_identity(price_cents: int, emission: str, block_number: int) -> None:
    """Raise ValueError if the block's price, emission id or number is not acceptable."""
    rules().multiplier(price_cents)  # raises for a price other than 100, 200, 300
    if not _EMISSION.fullmatch(emission):
        raise ValueError(
            f"emission id must be 1 to 64 letters, digits, '.', '_' or '-', got {emission!r}"
        )
    if isinstance(block_number, bool) or block_number < 1:
        raise ValueError(f"block number must be a positive integer, got {block_number!r}")


def generate_block(
    price_cents: int,
    *,
    emission: str = "E1",
    block_number: int = 1,
    vendor_key: bytes | str | None = None,
    operator_key: bytes | str | None = None,
    design: Design | None = None,
    progress: Progress | None = None,
) -> Block:
    """Make a block at ``price_cents`` (100, 200 or 300) from ``design`` (the regulation's by
    default). Keys are bytes or hex strings; both or neither (fresh OS secrets, forgotten).
    The manifest carries both keys' commitments, never the keys."""
    check_identity(price_cents, emission, block_number)
    design = design or default_design()
    game = rules()
    k = game.multiplier(price_cents)
    context = f"{game.name}|{emission}|{block_number}|{price_cents}|{design.digest}"
    vendor, operator = _key(vendor_key, "vendor"), _key(operator_key, "operator")
    if (vendor is None) != (operator is None):
        raise SeedKeyError("give both the vendor and the operator key, or neither")
    if vendor is None or operator is None:
        vendor, operator = new_key(), new_key()
    keys = derive_keys(vendor, operator, context=context)
    n = design.block_size
    plans = [Plan((), ())] + [c.plan() for c in design.compositions]
    counts = [n - design.winning_units] + [c.count for c in design.compositions]
    kinds = np.repeat(np.arange(len(plans), dtype=np.int64), counts)
    if progress is not None:
        progress("sale order", 0, 1)
    # The kinds in sale order: kind i of the design is sold at row rows[i].
    rows = secure_permutation(keys.order, n)
    sale_kinds = np.empty_like(kinds)
    sale_kinds[rows] = kinds
    if progress is not None:
        progress("sale order", 1, 1)
    laid = lay_out(
        plans,
        sale_kinds,
        layout_stream=keys.stream("layout"),
        fill_stream=keys.stream("fill"),
        look=looks(keys.stream("look"), n),
        progress=progress,
    )
    balance(laid, winning=sale_kinds > 0, stream=keys.stream("balance"), progress=progress)
    amounts = np.array([0] + [c.amount_cents * k for c in design.compositions], dtype=np.int64)
    lots = amounts[sale_kinds]
    manifest = Manifest(
        game=game.name,
        price_cents=price_cents,
        emission=emission,
        block_number=block_number,
        block_size=n,
        generator_version=GENERATOR_VERSION,
        design_name=design.name,
        design_digest=design.digest,
        test=design.test,
        prize_table=design.prize_table(price_cents),
        counts=tuple(
            CompositionCount(c.amount_cents * k, canonical(c.lines), canonical(c.bonus), c.count)
            for c in design.compositions
        ),
        units_sha256="",
        merkle_root="",
        vendor_key_commitment=commitment(vendor),
        operator_key_commitment=commitment(operator),
    )
    if progress is not None:
        progress("self-verify and hashes", 0, 1)
    tickets = ticket_bytes(laid.units)
    # Self-verification: the evaluator re-evaluates every unit against the manifest (nothing
    # of the layout's bookkeeping is used), while the hashes are computed, once, from the
    # ticket bytes of those same units. Everything here releases the GIL.
    with ThreadPoolExecutor(max_workers=2) as pool:
        digest = pool.submit(units_sha256, tickets)
        root = pool.submit(lambda: merkle_root(leaf_hashes(tickets, lots)))
        problems = audit_units(manifest, laid.units, lots)
        manifest = replace(manifest, units_sha256=digest.result(), merkle_root=root.result())
    if problems:
        raise SelfVerificationError(
            f"the generated block fails its self-verification: {'; '.join(problems[:3])}"
        )
    if progress is not None:
        progress("self-verify and hashes", 1, 1)
    return Block(manifest=manifest, units=laid.units, lots_cents=lots, tickets=tickets)
