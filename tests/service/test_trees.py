"""The stored Merkle trees (service/trees.py), on both databases: every level but the root, in
slices of 256 nodes, equal to the tree recomputed here with hashlib from the units, its root
the block's."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import Connection, delete, func, select

from pharaon.game.unit import Unit
from pharaon.pool import merkle
from pharaon.pool.blockfile import Block
from pharaon.service import loading, trees
from pharaon.service.clock import utcnow
from pharaon.store.tables import MerkleChunk
from pharaon.store.transactions import Transactions
from tests.conftest import make_block


def _hashlib_levels(block: Block) -> list[list[bytes]]:
    """The tree of ``block``, leaves first, root last, with nothing but hashlib."""
    level = [
        merkle.leaf_hash(serial, Unit(tuple(int(c) for c in cells)).ticket, int(lot))
        for serial, (cells, lot) in enumerate(zip(block.units, block.lots_cents, strict=True), 1)
    ]
    out = [level]
    while len(level) > 1:
        level = [
            hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest()
            if i + 1 < len(level)
            else level[i]  # an odd last node goes up unchanged
            for i in range(0, len(level), 2)
        ]
        out.append(level)
    return out


def _stored(db: Transactions, block_id: int) -> dict[int, list[tuple[int, bytes]]]:
    """The block's rows: (chunk, hashes) by level."""

    def read(connection: Connection) -> dict[int, list[tuple[int, bytes]]]:
        out: dict[int, list[tuple[int, bytes]]] = {}
        for level, chunk, hashes in connection.execute(
            select(MerkleChunk.level, MerkleChunk.chunk, MerkleChunk.hashes)
            .where(MerkleChunk.block_id == block_id)
            .order_by(MerkleChunk.level, MerkleChunk.chunk)
        ):
            out.setdefault(int(level), []).append((int(chunk), bytes(hashes)))
        return out

    return db.read(read)


def _load(db: Transactions, block: Block) -> int:
    return db.write(loading.load_block, block=block, allow_test=True, actor="test", now=utcnow())


@pytest.mark.parametrize("size", [16, 600])
def test_a_loaded_block_s_tree_is_stored_level_by_level(db: Transactions, size: int) -> None:
    block = make_block(100, size=size)
    block_id = _load(db, block)
    expected = _hashlib_levels(block)
    assert expected[-1][0].hex() == block.manifest.merkle_root
    stored = _stored(db, block_id)
    assert sorted(stored) == list(range(len(expected) - 1))  # every level but the root
    for level, nodes in enumerate(expected[:-1]):
        chunks = stored[level]
        assert [c for c, _ in chunks] == list(range(-(-len(nodes) // trees.CHUNK_NODES)))
        assert all(len(h) <= trees.CHUNK_NODES * 32 for _, h in chunks)
        assert b"".join(h for _, h in chunks) == b"".join(nodes)


def test_store_tree_returns_the_root_and_writes_the_same_rows_again(db: Transactions) -> None:
    block = make_block(200, size=300)
    block_id = _load(db, block)
    before = _stored(db, block_id)
    db.write(
        lambda session: session.execute(delete(MerkleChunk).where(MerkleChunk.block_id == block_id))
    )
    assert _stored(db, block_id) == {}
    root = db.write(
        trees.store_tree, block_id=block_id, units=block.units, lots_cents=block.lots_cents
    )
    assert root == block.manifest.merkle_root
    assert _stored(db, block_id) == before
    # Levels of 300, 150, 75, 38, 19, 10, 5, 3, 2 nodes: 2 + 8 rows.
    assert sum(len(chunks) for chunks in before.values()) == 10


def test_a_tree_of_one_leaf_is_its_root_with_no_rows(db: Transactions) -> None:
    block = make_block(100, size=16)
    block_id = _load(db, block)
    rows = db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(MerkleChunk)
        ).scalar_one()
    )
    root = db.write(
        trees.store_tree,
        block_id=block_id,
        units=block.units[:1],
        lots_cents=block.lots_cents[:1],
    )
    assert root == _hashlib_levels(block)[0][0].hex()
    assert (
        db.read(
            lambda connection: connection.execute(
                select(func.count()).select_from(MerkleChunk)
            ).scalar_one()
        )
        == rows
    )
