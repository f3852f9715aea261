"""A Merkle tree over a block's units, so that any one unit can be proven to belong to it.

Encoding (RFC 6962 style, documented in docs/block-format.md):

    leaf = SHA-256(0x00 ‖ serial u32 BE ‖ ticket 67 ASCII bytes ‖ lot_cents u64 BE)   80 bytes in
    node = SHA-256(0x01 ‖ left ‖ right)                                                65 bytes in

Levels pair nodes left to right; an odd last node goes up unchanged (this is RFC 6962's tree:
the left subtree is always the largest power of two). The root of one leaf is the leaf.

A million leaves and their nodes are four million SHA-256 compressions: they are computed by a
SHA-256 compiled with numba that hashes 64 fixed-size messages side by side (SIMD lanes), in
parallel; ``hashlib`` checks it in the tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final, cast

import numba
import numpy as np
from numpy.typing import NDArray

from pharaon.pool.blockfile import Block, ticket_bytes

LEAF_PREFIX: Final = 0x00
NODE_PREFIX: Final = 0x01
LEAF_BYTES: Final = 80
NODE_BYTES: Final = 65

_K: Final = np.array(
    [
        0x428A2F98,
        0x71374491,
        0xB5C0FBCF,
        0xE9B5DBA5,
        0x3956C25B,
        0x59F111F1,
        0x923F82A4,
        0xAB1C5ED5,
        0xD807AA98,
        0x12835B01,
        0x243185BE,
        0x550C7DC3,
        0x72BE5D74,
        0x80DEB1FE,
        0x9BDC06A7,
        0xC19BF174,
        0xE49B69C1,
        0xEFBE4786,
        0x0FC19DC6,
        0x240CA1CC,
        0x2DE92C6F,
        0x4A7484AA,
        0x5CB0A9DC,
        0x76F988DA,
        0x983E5152,
        0xA831C66D,
        0xB00327C8,
        0xBF597FC7,
        0xC6E00BF3,
        0xD5A79147,
        0x06CA6351,
        0x14292967,
        0x27B70A85,
        0x2E1B2138,
        0x4D2C6DFC,
        0x53380D13,
        0x650A7354,
        0x766A0ABB,
        0x81C2C92E,
        0x92722C85,
        0xA2BFE8A1,
        0xA81A664B,
        0xC24B8B70,
        0xC76C51A3,
        0xD192E819,
        0xD6990624,
        0xF40E3585,
        0x106AA070,
        0x19A4C116,
        0x1E376C08,
        0x2748774C,
        0x34B0BCB5,
        0x391C0CB3,
        0x4ED8AA4A,
        0x5B9CCA4F,
        0x682E6FF3,
        0x748F82EE,
        0x78A5636F,
        0x84C87814,
        0x8CC70208,
        0x90BEFFFA,
        0xA4506CEB,
        0xBEF9A3F7,
        0xC67178F2,
    ],
    dtype=np.int64,
)
_H0: Final = np.array(
    [
        0x6A09E667,
        0xBB67AE85,
        0x3C6EF372,
        0xA54FF53A,
        0x510E527F,
        0x9B05688C,
        0x1F83D9AB,
        0x5BE0CD19,
    ],
    dtype=np.int64,
)


_M32: Final = 0xFFFFFFFF
_LANES: Final = 64  # messages hashed side by side


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _M32


def _compress(state: Any, w: Any, k: Any, regs: Any, m: int) -> None:
    """One SHA-256 compression for each of ``m`` lanes side by side (the inner loops run
    across lanes, so the compiler turns them into SIMD instructions).

    ``state``: (8, L) chaining values, ``w``: (64, L) message schedule with words 0..15 set,
    ``regs``: (8, L) scratch. Words are int64 holding 32-bit values, masked after each sum.
    """
    for t in range(16, 64):
        for j in range(m):
            x = w[t - 15, j]
            y = w[t - 2, j]
            s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> 3)
            s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> 10)
            w[t, j] = (w[t - 16, j] + s0 + w[t - 7, j] + s1) & _M32
    for i in range(8):
        for j in range(m):
            regs[i, j] = state[i, j]
    for t in range(64):
        kt = k[t]
        for j in range(m):
            a = regs[0, j]
            b = regs[1, j]
            c = regs[2, j]
            d = regs[3, j]
            e = regs[4, j]
            f = regs[5, j]
            g = regs[6, j]
            h = regs[7, j]
            s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
            ch = (e & f) ^ (~e & g)
            t1 = h + s1 + ch + kt + w[t, j]
            s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
            maj = (a & b) ^ (a & c) ^ (b & c)
            regs[7, j] = g
            regs[6, j] = f
            regs[5, j] = e
            regs[4, j] = (d + t1) & _M32
            regs[3, j] = c
            regs[2, j] = b
            regs[1, j] = a
            regs[0, j] = (t1 + s0 + maj) & _M32
    for i in range(8):
        for j in range(m):
            state[i, j] = (state[i, j] + regs[i, j]) & _M32


def _load_words(block: Any, w: Any, j: int) -> None:
    """Message words 0..15 of lane ``j`` from 64 bytes, big-endian."""
    for t in range(16):
        w[t, j] = (
            (np.int64(block[4 * t]) << 24)
            | (np.int64(block[4 * t + 1]) << 16)
            | (np.int64(block[4 * t + 2]) << 8)
            | np.int64(block[4 * t + 3])
        )


def _hash_rows(messages: Any, out: Any, k: Any, h0: Any) -> None:
    """SHA-256 of each row of ``messages`` ((n, m) uint8, 64 ≤ m < 120: two blocks)."""
    n, m = messages.shape
    chunks = (n + _LANES - 1) // _LANES
    for chunk in numba.prange(chunks):
        w = np.empty((64, _LANES), dtype=np.int64)
        state = np.empty((8, _LANES), dtype=np.int64)
        regs = np.empty((8, _LANES), dtype=np.int64)
        tail = np.zeros(64, dtype=np.uint8)
        start = chunk * _LANES
        lanes = min(_LANES, n - start)
        for j in range(lanes):
            for i in range(8):
                state[i, j] = h0[i]
            _load_words(messages[start + j], w, j)
        _compress(state, w, k, regs, lanes)
        # Second block: the message's last m - 64 bytes, 0x80, zeros, the bit length.
        bits = m * 8
        for j in range(lanes):
            row = messages[start + j]
            for i in range(64):
                tail[i] = 0
            for i in range(m - 64):
                tail[i] = row[64 + i]
            tail[m - 64] = 0x80
            tail[62] = (bits >> 8) & 0xFF
            tail[63] = bits & 0xFF
            _load_words(tail, w, j)
        _compress(state, w, k, regs, lanes)
        for j in range(lanes):
            for i in range(8):
                v = state[i, j]
                out[start + j, 4 * i] = (v >> 24) & 0xFF
                out[start + j, 4 * i + 1] = (v >> 16) & 0xFF
                out[start + j, 4 * i + 2] = (v >> 8) & 0xFF
                out[start + j, 4 * i + 3] = v & 0xFF


_rotr = numba.njit(inline="always")(_rotr)
_compress = numba.njit(inline="always")(_compress)
_load_words = numba.njit(inline="always")(_load_words)
_hash_rows_compiled = cast(
    Callable[..., None], numba.njit(cache=True, parallel=True, nogil=True)(_hash_rows)
)


def sha256_rows(messages: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """(n, 32) uint8: SHA-256 of each row of ``messages`` ((n, m) uint8, 64 ≤ m ≤ 119: two
    compression blocks)."""
    if messages.ndim != 2 or not 64 <= messages.shape[1] <= 119:
        raise ValueError(f"messages must be (n, 64..119) uint8, got {messages.shape}")
    out = np.empty((messages.shape[0], 32), dtype=np.uint8)
    _hash_rows_compiled(np.ascontiguousarray(messages, dtype=np.uint8), out, _K, _H0)
    return out


def leaf_messages(tickets: NDArray[np.uint8], lots_cents: NDArray[np.int64]) -> NDArray[np.uint8]:
    """(n, 80) uint8 leaf inputs; ``tickets``: (n, 67) ASCII bytes, row i is serial i + 1."""
    n = tickets.shape[0]
    out = np.empty((n, LEAF_BYTES), dtype=np.uint8)
    out[:, 0] = LEAF_PREFIX
    out[:, 1:5] = np.arange(1, n + 1, dtype=">u4").view(np.uint8).reshape(n, 4)
    out[:, 5:72] = tickets
    out[:, 72:80] = lots_cents.astype(">u8").view(np.uint8).reshape(n, 8)
    return out


def leaf_hashes(tickets: NDArray[np.uint8], lots_cents: NDArray[np.int64]) -> NDArray[np.uint8]:
    """(n, 32) uint8: the leaf hashes of a block's units in sale order."""
    return sha256_rows(leaf_messages(tickets, lots_cents))


def _parents(level: NDArray[np.uint8]) -> NDArray[np.uint8]:
    pairs = level.shape[0] // 2
    messages = np.empty((pairs, NODE_BYTES), dtype=np.uint8)
    messages[:, 0] = NODE_PREFIX
    messages[:, 1:] = level[: 2 * pairs].reshape(pairs, 64)
    up = sha256_rows(messages)
    if level.shape[0] % 2:
        up = np.concatenate([up, level[-1:]])
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
