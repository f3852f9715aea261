"""A Merkle tree over a block's units, so that any one unit can be proven to belong to it.

Encoding (RFC 6962 style, documented in docs/block-format.md):

    leaf = SHA-256(0x00 ‖ serial u32 BE ‖ ticket 67 ASCII bytes ‖ lot_cents u64 BE)   80 bytes in
    node = SHA-256(0x01 ‖ left ‖ right)                                                65 bytes in

Levels pair nodes left to right; an odd last node goes up unchanged (this is RFC 6962's tree:
the left subtree is always the largest power of two). The root of one leaf is the leaf.

A million leaves and their nodes are three million SHA-256 compressions: they are computed by
the compiled kernels of pharaon.pool._sha256 (the CPU's SHA extensions where it has them), in
threads; ``hashlib`` checks them in the tests.
"""

from __future__ import annotations

import hashlib
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.game.unit import TICKET_LENGTH
from pharaon.pool import _sha256
from pharaon.pool.blockfile import Block, ticket_bytes

LEAF_PREFIX: Final = 0x00
NODE_PREFIX: Final = 0x01


def sha256_rows(messages: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """(n, 32) uint8: SHA-256 of each row of ``messages`` ((n, m) uint8, 64 ≤ m ≤ 119: two
    compression blocks)."""
    if messages.ndim != 2 or not 64 <= messages.shape[1] <= 119:
        raise ValueError(f"messages must be (n, 64..119) uint8, got {messages.shape}")
    return _sha256.sha256_rows(messages.astype(np.uint8, copy=False))


def leaf_hashes(tickets: NDArray[np.uint8], lots_cents: NDArray[np.int64]) -> NDArray[np.uint8]:
    """(n, 32) uint8: the leaf hashes of a block's units in sale order (``tickets``: (n, 67)
    ASCII bytes, row i is serial i + 1; ``lots_cents``: (n,))."""
    n = tickets.shape[0]
    if tickets.shape != (n, TICKET_LENGTH) or lots_cents.shape != (n,):
        raise ValueError(f"tickets must be (n, {TICKET_LENGTH}) and lots (n,)")
    out = np.empty((n, 32), dtype=np.uint8)
    lots = np.ascontiguousarray(lots_cents, dtype=np.int64)
    _sha256.run("leaves", (np.ascontiguousarray(tickets, dtype=np.uint8), lots, out), n)
    return out


def _parents(level: NDArray[np.uint8]) -> NDArray[np.uint8]:
    pairs = level.shape[0] // 2
    up = np.empty((pairs + level.shape[0] % 2, 32), dtype=np.uint8)
    _sha256.run("parents", (level, up), pairs)
    if level.shape[0] % 2:
        up[pairs] = level[-1]  # an odd last node goes up unchanged
    return up


def levels(leaves: NDArray[np.uint8]) -> list[NDArray[np.uint8]]:
    """Every level of the tree, leaves first, root last ((1, 32))."""
    if leaves.shape[0] == 0:
        raise ValueError("a Merkle tree needs at least one leaf")
    out = [leaves]
    while out[-1].shape[0] > 1:
        out.append(_parents(out[-1]))
    return out


def merkle_root(leaves: NDArray[np.uint8]) -> str:
    """The root (hex) over (n, 32) uint8 leaf hashes."""
    return bytes(levels(leaves)[-1][0]).hex()


def merkle_proof(block: Block, serial: int) -> list[tuple[str, str]]:
    """The proof that unit ``serial`` (1..n) belongs to ``block``: [(side, sibling hex)],
    bottom up; ``side`` says where the sibling sits, ``'L'`` (hash it on the left) or ``'R'``.

    Check it with :func:`verify_proof` and nothing but the unit, the proof and the root.
    """
    if not 1 <= serial <= block.size:
        raise ValueError(f"serial must be 1..{block.size}, got {serial}")
    leaves = leaf_hashes(ticket_bytes(block.units), block.lots_cents)
    return audit_path(leaves, serial - 1)


def audit_path(leaves: NDArray[np.uint8], index: int) -> list[tuple[str, str]]:
    """The audit path of leaf ``index`` (0-based) among (n, 32) uint8 ``leaves``."""
    if not 0 <= index < leaves.shape[0]:
        raise ValueError(f"leaf index must be 0..{leaves.shape[0] - 1}, got {index}")
    path: list[tuple[str, str]] = []
    for level in levels(leaves)[:-1]:
        sibling = index ^ 1
        if sibling < level.shape[0]:
            side = "L" if sibling < index else "R"
            path.append((side, bytes(level[sibling]).hex()))
        index //= 2
    return path


def leaf_hash(serial: int, ticket: str, lot_cents: int) -> bytes:
    """One leaf hash with hashlib: what anyone can recompute from a CSV row."""
    data = bytes([LEAF_PREFIX]) + serial.to_bytes(4, "big") + ticket.encode("ascii")
    return hashlib.sha256(data + lot_cents.to_bytes(8, "big")).digest()


def verify_proof(
    root_hex: str, serial: int, ticket: str, lot_cents: int, proof: list[tuple[str, str]]
) -> bool:
    """Whether the unit (serial, ticket, lot) belongs to the tree of root ``root_hex``."""
    node = leaf_hash(serial, ticket, lot_cents)
    for side, sibling_hex in proof:
        sibling = bytes.fromhex(sibling_hex)
        pair = sibling + node if side == "L" else node + sibling
        node = hashlib.sha256(bytes([NODE_PREFIX]) + pair).digest()
    return node.hex() == root_hex.lower()
