"""A transparency log's Merkle tree (RFC 6962, RFC 9162 §2.1): hashes, proofs and their checks,
as pure functions over 32-byte hashes. No I/O: who stores the nodes asks which ones a proof
needs (:func:`inclusion_ranges`, :func:`consistency_ranges`, :func:`complete_subtrees`), reads
them, and folds them (:func:`range_hash`).

    leaf = SHA-256(0x00 ‖ leaf bytes)          node = SHA-256(0x01 ‖ left ‖ right)

The tree over leaves ``D[0:n]`` splits at ``k``, the largest power of two below ``n``:
``MTH(D[0:n]) = node(MTH(D[0:k]), MTH(D[k:n]))``; the empty tree's hash is SHA-256 of nothing.
A range ``[start, end)`` stands for the subtree hash ``MTH(D[start:end])``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Final

HASH_BYTES: Final = 32
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()
_LEAF: Final = b"\x00"
_NODE: Final = b"\x01"

Range = tuple[int, int]  # [start, end) of leaf indices
Node = tuple[int, int]  # (level, index): the complete subtree of leaves index·2^level onwards


def leaf_hash(data: bytes) -> bytes:
    """The hash of one leaf's bytes."""
    return hashlib.sha256(_LEAF + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an inner node over its two children's hashes."""
    return hashlib.sha256(_NODE + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n ≥ 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH of the leaf hashes ``leaves`` (the reference: recursive, for tests and small trees)."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return node_hash(root(leaves[:k]), root(leaves[k:]))


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The subtrees whose hashes make the inclusion proof of leaf ``index`` in the tree of
    ``size`` leaves (RFC 6962 §2.1.1 PATH), bottom up."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index must be 0..{size - 1}, got {index}")
    out: list[Range] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start += k
    return out[::-1]


def consistency_ranges(first: int, second: int) -> list[Range]:
    """The subtrees whose hashes make the proof that the tree of ``first`` leaves is a prefix
    of that of ``second`` (RFC 6962 §2.1.2 PROOF), in the RFC's order; empty when ``first`` is
    0 or equals ``second``."""
    if not 0 <= first <= second:
        raise ValueError(f"sizes must be 0 <= first <= second, got {first} and {second}")
    if first in (0, second):
        return []
    out: list[Range] = []
    start, end, whole = 0, second, True  # whole: the old tree is still this subtree's prefix
    m = first
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start, m, whole = start + k, m - k, False
    if not whole:
        out.append((start, end))
    return out[::-1]


def complete_subtrees(start: int, end: int) -> list[Node]:
    """``[start, end)`` cut into complete subtrees (aligned, a power of two each), left to
    right, as (level, index): the nodes a store keeps. For the ranges of a proof or a root,
    :func:`range_hash` folds their hashes into the range's."""
    out: list[Node] = []
    while start < end:
        level = (start & -start).bit_length() - 1 if start else (end - start).bit_length() - 1
        while start + (1 << level) > end:
            level -= 1
        out.append((level, start >> level))
        start += 1 << level
    return out


def range_hash(start: int, end: int, nodes: Mapping[Node, bytes]) -> bytes:
    """MTH(D[start:end]) from the hashes of its :func:`complete_subtrees` (``nodes``): the
    right edge of an RFC 6962 tree is their fold from the right."""
    if start == end:
        return EMPTY_ROOT
    parts = [nodes[n] for n in complete_subtrees(start, end)]
    digest = parts[-1]
    for left in reversed(parts[:-1]):
        digest = node_hash(left, digest)
    return digest


def nodes_for(ranges: Sequence[Range]) -> set[Node]:
    """The stored nodes that the hashes of ``ranges`` need."""
    return {node for start, end in ranges for node in complete_subtrees(start, end)}


def prove(ranges: Sequence[Range], node: Callable[[Node], bytes]) -> list[bytes]:
    """The hashes of ``ranges``, their nodes read by ``node``."""
    found = {n: node(n) for n in nodes_for(ranges)}
    return [range_hash(start, end, found) for start, end in ranges]


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root_hash: bytes
) -> bool:
    """Whether ``proof`` shows the leaf hash ``leaf`` at ``index`` in the tree of ``size``
    leaves and root ``root_hash`` (RFC 9162 §2.1.3.2)."""
    if not 0 <= index < size or any(len(p) != HASH_BYTES for p in proof):
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root_hash


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree of ``first`` leaves and root ``first_root`` to be a
    prefix of the tree of ``second`` leaves and root ``second_root`` (RFC 9162 §2.1.4.2; an
    empty tree is a prefix of any, a tree is its own with an empty proof)."""
    if not 0 <= first <= second or any(len(p) != HASH_BYTES for p in proof):
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof and first_root == EMPTY_ROOT
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # the old tree is a complete subtree: its root starts it
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_root and sr == second_root and sn == 0


class Frontier:
    """The right edge of a growing tree: leaves are appended one by one and the root of the
    tree so far is at hand, in O(log n) memory (one hash per set bit of the size)."""

    __slots__ = ("_stack", "size")

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[bytes] = []  # complete subtrees, largest first

    def append(self, leaf: bytes) -> None:
        self._stack.append(leaf)
        self.size += 1
        merged = self.size
        while not merged & 1:  # each trailing zero bit: two equal subtrees become one
            right = self._stack.pop()
            self._stack[-1] = node_hash(self._stack[-1], right)
            merged >>= 1

    def root(self) -> bytes:
        if not self._stack:
            return EMPTY_ROOT
        digest = self._stack[-1]
        for left in reversed(self._stack[:-1]):
            digest = node_hash(left, digest)
        return digest
