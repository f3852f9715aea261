"""Migration 0004 keeps the Merkle trees of the blocks loaded before it."""

from __future__ import annotations

from sqlalchemy import Engine, select

from pharaon.store.engine import make_sessionmaker
from pharaon.store.migrate import downgrade, upgrade
from pharaon.store.tables import MerkleChunk
from tests.conftest import BlockLoader


def _chunks(engine: Engine) -> list[tuple[int, int, int, bytes]]:
    with make_sessionmaker(engine)() as session:
        return [
            (int(b), int(level), int(c), bytes(h))
            for b, level, c, h in session.execute(
                select(
                    MerkleChunk.block_id, MerkleChunk.level, MerkleChunk.chunk, MerkleChunk.hashes
                ).order_by(MerkleChunk.block_id, MerkleChunk.level, MerkleChunk.chunk)
            )
        ]


def test_the_trees_of_older_blocks_are_built_by_the_migration(
    engine: Engine, load: BlockLoader
) -> None:
    load(100, size=300)
    load(200, size=41, number=2)
    at_load = _chunks(engine)
    assert {b for b, _, _, _ in at_load} == {1, 2}
    downgrade(engine, "0003")  # as a database made before 0004: no trees
    upgrade(engine)
    assert _chunks(engine) == at_load
