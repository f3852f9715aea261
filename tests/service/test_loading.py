"""Loading a block (service/loading.py), on both databases, beside tests/service/test_blocks.py
(units in sale order, the refusals of a test block, a second load and a failed verification,
block files): what else a load stores (its prize counts, its sale runs, its audit record), the
progress it reports, a duplicate found by its identity or by its units, a block of another
game, and the first start's question."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from sqlalchemy import Connection, func, select

from pharaon.pool.blockfile import Block as BlockData
from pharaon.service import loading
from pharaon.service.clock import utcnow
from pharaon.service.errors import BlockRefusedError
from pharaon.store.tables import AuditRecord, Block, BlockPrize, SaleRun
from pharaon.store.transactions import Transactions
from tests.conftest import make_block


def _load(db: Transactions, block: BlockData, **options: object) -> int:
    return db.write(
        loading.load_block, block=block, allow_test=True, actor="ops", now=utcnow(), **options
    )


def _blocks(db: Transactions) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(select(func.count()).select_from(Block)).scalar_one()
        )
    )


def test_a_load_stores_its_prize_counts_runs_and_audit_record(db: Transactions) -> None:
    block = make_block(200, size=100, number=4)
    block_id = _load(db, block, sale_runs=3)
    m = block.manifest

    def read(connection: Connection) -> tuple[dict[int, int], list[tuple[int, int, int]], str]:
        prizes = {
            int(lot): int(n)
            for lot, n in connection.execute(
                select(BlockPrize.lot_cents, BlockPrize.units).where(
                    BlockPrize.block_id == block_id
                )
            )
        }
        sale_runs = [
            (int(a), int(b), int(c))
            for a, b, c in connection.execute(
                select(SaleRun.first_serial, SaleRun.last_serial, SaleRun.next_serial)
                .where(SaleRun.block_id == block_id)
                .order_by(SaleRun.run)
            )
        ]
        [(actor, payload)] = connection.execute(
            select(AuditRecord.actor, AuditRecord.payload).where(AuditRecord.kind == "block_loaded")
        ).all()
        assert actor == "ops"
        return prizes, sale_runs, payload

    prizes, sale_runs, payload = db.read(read)
    lots, counts = np.unique(block.lots_cents[block.lots_cents > 0], return_counts=True)
    assert prizes == dict(zip(lots.tolist(), counts.tolist(), strict=True))
    assert sum(prizes.values()) == int((block.lots_cents > 0).sum())
    assert sale_runs == [(1, 33, 1), (34, 66, 34), (67, 100, 67)]
    assert json.loads(payload) == {
        "block_id": block_id,
        "emission": m.emission,
        "price_cents": 200,
        "block_number": 4,
        "block_size": 100,
        "units_sha256": m.units_sha256,
        "merkle_root": m.merkle_root,
        "test": True,
    }


def test_a_load_reports_its_progress(db: Transactions) -> None:
    seen: list[tuple[str, int, int]] = []
    _load(db, make_block(100, size=40), progress=lambda *step: seen.append(step))
    assert seen == [
        ("verify", 0, 1),
        ("verify", 1, 1),
        ("load units", 40, 40),
        ("Merkle tree", 0, 1),
        ("Merkle tree", 1, 1),
    ]


def test_a_duplicate_is_found_by_its_identity_or_by_its_units(db: Transactions) -> None:
    block = make_block(100, size=50, number=1)
    first = _load(db, block)
    other_units = make_block(100, size=40, number=1)  # the same emission, price and number
    with pytest.raises(BlockRefusedError, match="already loaded") as refused:
        _load(db, other_units)
    assert refused.value.code == "block_refused"
    renumbered = BlockData(replace(block.manifest, block_number=7), block.units, block.lots_cents)
    with pytest.raises(BlockRefusedError, match="already loaded"):
        _load(db, renumbered)
    assert _blocks(db) == 1
    # Another number with its own units loads; neither opens before an auditor approves it.
    second = _load(db, make_block(100, size=40, number=2))
    states = db.read(
        lambda connection: connection.execute(
            select(Block.id, Block.state, Block.loaded_by, Block.approved_at).order_by(Block.id)
        ).all()
    )
    assert [tuple(row) for row in states] == [
        (first, "loaded", "ops", None),
        (second, "loaded", "ops", None),
    ]


def test_a_block_of_another_game_is_refused(db: Transactions) -> None:
    block = make_block(100, size=40)
    foreign = BlockData(replace(block.manifest, game="sphinx"), block.units, block.lots_cents)
    with pytest.raises(BlockRefusedError, match="block is for game 'sphinx'"):
        _load(db, foreign)
    assert _blocks(db) == 0


def test_the_first_start_loads_blocks_only_into_an_empty_database(db: Transactions) -> None:
    assert not db.read(loading.has_blocks)
    assert db.write(loading.begin_first_start) is True
    _load(db, make_block(100, size=40))
    assert db.read(loading.has_blocks)
    assert db.write(loading.begin_first_start) is False
