"""Keeping each block's Merkle tree, so that a play's proof reads a few hashes.

Every level but the root (level 0: the leaves, in serial order) is stored in slices of
:data:`CHUNK_NODES` nodes, one row of ``merkle_chunks`` each: a proof then reads one hash per
level (:mod:`pharaon.service.proofs`), instead of rebuilding a 1,000,000-leaf tree per request.
A 1,000,000-unit block's tree is 2,000,000 nodes, 64 MB in about 7,800 rows. It is computed
when the block is loaded (it needs the block factory's compiled SHA-256: not in the server).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import insert
from sqlalchemy.orm import Session

from pharaon.pool import merkle
from pharaon.pool.blockfile import ticket_bytes
from pharaon.store.tables import MerkleChunk

CHUNK_NODES = 256  # 8 KB of hashes per row
_HASH = 32


def _rows(block_id: int, leaves: NDArray[np.uint8]) -> Iterator[dict[str, object]]:
    levels = merkle.levels(leaves)
    for level, nodes in enumerate(levels[:-1]):  # the root is the block's merkle_root
        blob = np.ascontiguousarray(nodes).tobytes()
        step = CHUNK_NODES * _HASH
        for chunk, start in enumerate(range(0, len(blob), step)):
            yield {
                "block_id": block_id,
                "level": level,
                "chunk": chunk,
                "hashes": blob[start : start + step],
            }


def store_tree(
    session: Session, *, block_id: int, units: NDArray[np.int8], lots_cents: NDArray[np.int64]
) -> str:
    """Store the tree of block ``block_id`` (``units``: (n, 64) int8 in serial order,
    ``lots_cents``: (n,)) in the caller's transaction; its root (hex)."""
    leaves = merkle.leaf_hashes(ticket_bytes(units), lots_cents)
    rows = list(_rows(block_id, leaves))
    if rows:
        session.execute(insert(MerkleChunk), rows)
    return merkle.merkle_root(leaves)
