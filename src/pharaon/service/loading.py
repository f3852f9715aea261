"""Loading a block from the factory: verified first, refused if it is a test block (unless
allowed) or already loaded; its units bulk-loaded (:func:`pharaon.store.dialect.copy_rows`)
with the block row, its prize counts, its Merkle tree (for the players' proofs), an
audit record and a checkpoint of the audit chain, all in the caller's transaction (the caller
commits, or rolls back what a refusal or an error left half done). A loaded block waits for
an auditor's approval before it goes on sale (:mod:`pharaon.service.approvals`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, insert, or_, select
from sqlalchemy.orm import Session

from pharaon.game.rules import rules
from pharaon.pool.blockfile import Block as BlockData
from pharaon.pool.blockfile import BlockFileError, read_block
from pharaon.pool.verify import verify_block
from pharaon.service import audit, checkpoints, revealed_keys, runs, trees
from pharaon.service.blocks import Progress
from pharaon.service.errors import BlockRefusedError
from pharaon.store.dialect import copy_rows, once_per_deployment
from pharaon.store.tables import Block, BlockPrize

CHUNK = 50_000


def _refuse_duplicate(session: Session, block: BlockData) -> None:
    m = block.manifest
    row = session.execute(
        select(Block.id).where(
            or_(
                Block.units_sha256 == m.units_sha256,
                (Block.game == m.game)
                & (Block.emission == m.emission)
                & (Block.price_cents == m.price_cents)
                & (Block.block_number == m.block_number),
            )
        )
    ).first()
    if row is not None:
        raise BlockRefusedError(
            f"block {m.emission}/{m.price_cents}/{m.block_number} is already loaded "
            f"(block id {row.id})"
        )


def _unit_rows(
    block_id: int, block: BlockData, progress: Progress | None
) -> Iterator[tuple[int, int, bytes, int]]:
    """The rows of ``units`` for ``block``, a chunk of the array at a time."""
    units = np.ascontiguousarray(block.units, dtype=np.int8)
    lots = block.lots_cents.tolist()
    for start in range(0, block.size, CHUNK):
        stop = min(start + CHUNK, block.size)
        blob = units[start:stop].tobytes()
        for i in range(stop - start):
            yield (block_id, start + i + 1, blob[i * 64 : (i + 1) * 64], lots[start + i])
        if progress is not None:
            progress("load units", stop, block.size)


def load_block(
    *,
    session: Session,
    block: BlockData,
    allow_test: bool,
    actor: str,
    now: datetime,
    progress: Progress | None = None,
    sale_runs: int = 1,
) -> int:
    """Verify ``block`` and store it with its units, in the caller's transaction, its sale
    order cut into ``sale_runs`` runs (:mod:`pharaon.service.runs`); returns its id. Refuses a
    test block unless ``allow_test``, a block that fails verification, and one already
    loaded. The block stays ``loaded``, off sale, until an auditor other than ``actor``
    approves it (:func:`pharaon.service.approvals.approve`)."""
    m = block.manifest
    if m.test and not allow_test:
        raise BlockRefusedError(
            "this is a test block; set PHARAON_ALLOW_TEST_BLOCKS=1 to load test blocks"
        )
    if m.game != rules().name:
        raise BlockRefusedError(f"block is for game {m.game!r}, not {rules().name!r}")
    if progress is not None:
        progress("verify", 0, 1)
    report = verify_block(block)
    if not report.ok:
        raise BlockRefusedError("block fails verification: " + "; ".join(report.problems[:3]))
    if progress is not None:
        progress("verify", 1, 1)
    _refuse_duplicate(session, block)
    if revealed_keys.are_revealed(
        session.connection(), vendor=m.vendor_key_commitment, operator=m.operator_key_commitment
    ):
        raise BlockRefusedError(
            "this block's keys are published (revealed at a close): anyone can tell its draws"
        )
    block_id = session.execute(
        insert(Block)
        .values(
            game=m.game,
            emission=m.emission,
            price_cents=m.price_cents,
            block_number=m.block_number,
            block_size=m.block_size,
            is_test=m.test,
            units_sha256=m.units_sha256,
            merkle_root=m.merkle_root,
            manifest_json=json.dumps(m.as_json(), sort_keys=True),
            state="loaded",
            loaded_at=now,
            loaded_by=actor,
        )
        .returning(Block.id)
    ).scalar_one()
    copy_rows(
        session.connection(),
        "units",
        ("block_id", "serial", "cells", "lot_cents"),
        _unit_rows(int(block_id), block, progress),
    )
    runs.lay_out(session, block_id=int(block_id), block_size=m.block_size, runs=sale_runs)
    if progress is not None:
        progress("Merkle tree", 0, 1)
    root = trees.store_tree(
        session, block_id=int(block_id), units=block.units, lots_cents=block.lots_cents
    )
    if root != m.merkle_root:  # verify_block checked it: a mismatch is a bug, not a block
        raise RuntimeError(f"Merkle root {root} differs from the manifest's {m.merkle_root}")
    if progress is not None:
        progress("Merkle tree", 1, 1)
    lots, counts = np.unique(block.lots_cents[block.lots_cents > 0], return_counts=True)
    if len(lots):
        session.execute(
            insert(BlockPrize),
            [
                {"block_id": block_id, "lot_cents": int(lot), "units": int(n)}
                for lot, n in zip(lots, counts, strict=True)
            ],
        )
    audit.append(
        session,
        kind="block_loaded",
        actor=actor,
        payload={
            "block_id": block_id,
            "emission": m.emission,
            "price_cents": m.price_cents,
            "block_number": m.block_number,
            "block_size": m.block_size,
            "units_sha256": m.units_sha256,
            "merkle_root": m.merkle_root,
            "test": m.test,
        },
        now=now,
    )
    checkpoints.take(session, reason="block_loaded", now=now)
    return int(block_id)


def load_block_file(
    *,
    session: Session,
    path: Path,
    allow_test: bool,
    actor: str,
    now: datetime,
    progress: Progress | None = None,
    sale_runs: int = 1,
) -> int:
    """Read, verify and load the block file at ``path`` (see :func:`load_block`)."""
    try:
        block = read_block(path)
    except BlockFileError as exc:
        raise BlockRefusedError(str(exc)) from exc
    return load_block(
        session=session,
        block=block,
        allow_test=allow_test,
        actor=actor,
        now=now,
        progress=progress,
        sale_runs=sale_runs,
    )


def has_blocks(*, connection: Connection) -> bool:
    """Whether any block was ever loaded."""
    return connection.execute(select(Block.id).limit(1)).first() is not None


def begin_first_start(*, session: Session) -> bool:
    """Whether the caller is to load a first start's blocks, in its transaction: it waits while
    another server does (once per deployment), then finds whether any are loaded."""
    once_per_deployment(session.connection(), "first start")
    return not has_blocks(connection=session.connection())
