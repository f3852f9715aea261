"""A play's proof: its unit, lot and serial, the audit path to its block's Merkle root, and the
root, so that the player can check the play belongs to the published block (docs/proofs.md).

The path is read from the stored tree (:mod:`pharaon.service.trees`): one hash per level, in
one statement. Only the owner of a finished play gets its proof: an unfinished « Jouer » play's
proof would tell its lot before its fourth grid.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, literal, select, union_all

from pharaon.game.board import GRIDS
from pharaon.game.unit import Unit
from pharaon.service.errors import ConflictError, NotFoundError
from pharaon.store.tables import Block, MerkleChunk, PlayRow, UnitRow

CHUNK_NODES = 256  # as pharaon.service.trees.CHUNK_NODES (kept apart: no block factory here)
_HASH = 32
_ALL_GRIDS = (1 << GRIDS) - 1


@dataclass(frozen=True, slots=True)
class Proof:
    """That unit ``serial`` (``ticket``, ``lot_cents``) is a leaf of the tree of root
    ``merkle_root``: ``path`` is its siblings bottom up, (side, hash hex), side ``L`` when the
    sibling is hashed on the left."""

    play_id: int
    block_id: int
    game: str
    emission: str
    price_cents: int
    block_number: int
    block_size: int
    serial: int
    ticket: str
    lot_cents: int
    path: tuple[tuple[str, str], ...]
    merkle_root: str


def path_nodes(size: int, serial: int) -> list[tuple[int, int, str]]:
    """The siblings on the path of unit ``serial`` (1..size) in a tree of ``size`` leaves:
    (level, index, side) bottom up; a level where the node has no sibling adds none."""
    out: list[tuple[int, int, str]] = []
    index, count, level = serial - 1, size, 0
    while count > 1:
        sibling = index ^ 1
        if sibling < count:
            out.append((level, sibling, "L" if sibling < index else "R"))
        index, count, level = index // 2, (count + 1) // 2, level + 1
    return out


def play_proof(*, connection: Connection, player_id: int, play_id: int) -> Proof:
    """The proof of the player's play ``play_id``; :class:`NotFoundError` for anyone else's,
    :class:`ConflictError` for a play not yet fully uncovered."""
    row = connection.execute(
        select(
            PlayRow.revealed,
            PlayRow.serial,
            Block.id,
            Block.game,
            Block.emission,
            Block.price_cents,
            Block.block_number,
            Block.block_size,
            Block.merkle_root,
            UnitRow.cells,
            UnitRow.lot_cents,
        )
        .join(Block, Block.id == PlayRow.block_id)
        .join(UnitRow, (UnitRow.block_id == PlayRow.block_id) & (UnitRow.serial == PlayRow.serial))
        .where(PlayRow.id == play_id, PlayRow.player_id == player_id)
    ).first()
    if row is None:
        raise NotFoundError(f"no play {play_id} of yours")
    if row.revealed != _ALL_GRIDS:
        raise ConflictError(f"play {play_id} is not finished: uncover its four grids first")
    nodes = path_nodes(row.block_size, row.serial)
    found: dict[int, bytes] = {}
    if nodes:
        parts = [
            select(
                literal(level).label("level"),
                func.substr(MerkleChunk.hashes, (index % CHUNK_NODES) * _HASH + 1, _HASH).label(
                    "node"
                ),
            ).where(
                MerkleChunk.block_id == row.id,
                MerkleChunk.level == level,
                MerkleChunk.chunk == index // CHUNK_NODES,
            )
            for level, index, _ in nodes
        ]
        found = {int(level): bytes(node) for level, node in connection.execute(union_all(*parts))}
    if len(found) != len(nodes) or any(len(h) != _HASH for h in found.values()):
        raise NotFoundError(f"the Merkle tree of block {row.id} is not stored")
    return Proof(
        play_id=play_id,
        block_id=int(row.id),
        game=str(row.game),
        emission=str(row.emission),
        price_cents=int(row.price_cents),
        block_number=int(row.block_number),
        block_size=int(row.block_size),
        serial=int(row.serial),
        ticket=Unit(tuple(bytes(row.cells))).ticket,
        lot_cents=int(row.lot_cents),
        path=tuple((side, found[level].hex()) for level, _, side in nodes),
        merkle_root=str(row.merkle_root),
    )
