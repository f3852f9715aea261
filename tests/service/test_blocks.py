"""Loading, listing and deactivating blocks; the block at a price after another sells out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, func, select

from pharaon.pool.blockfile import Block as BlockData
from pharaon.pool.blockfile import read_block, write_block
from pharaon.service import blocks, loading
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import BlockRefusedError, ConflictError, InvalidError, NotFoundError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Block, UnitRow
from tests.conftest import BlockLoader, load_for_sale, make_block


def _load(engine: Engine, block: BlockData, *, allow_test: bool = True) -> int:
    """Load ``block`` and approve it (an auditor's)."""
    return load_for_sale(engine, block, allow_test=allow_test)


def _states(engine: Engine) -> dict[int, str]:
    with make_sessionmaker(engine)() as session:
        return {b.block_id: b.state for b in blocks.list_blocks(connection=session.connection())}


def test_load_stores_every_unit_in_sale_order(engine: Engine) -> None:
    block = make_block(200, size=100, number=3)
    block_id = _load(engine, block)
    with make_sessionmaker(engine)() as session:
        rows = session.execute(
            select(UnitRow.serial, UnitRow.cells, UnitRow.lot_cents)
            .where(UnitRow.block_id == block_id)
            .order_by(UnitRow.serial)
        ).all()
        [summary] = blocks.list_blocks(connection=session.connection())
    assert [r.serial for r in rows] == list(range(1, 101))
    cells = np.array([np.frombuffer(r.cells, dtype=np.int8) for r in rows])
    assert np.array_equal(cells, block.units)
    assert [r.lot_cents for r in rows] == block.lots_cents.tolist()
    assert summary.state == "open"
    assert summary.sold == 0
    assert summary.price_cents == 200
    lots = dict(summary.remaining_lots)
    assert sum(lots.values()) == int((block.lots_cents > 0).sum())
    assert sum(k * v for k, v in lots.items()) == int(block.lots_cents.sum())


def test_refusals_change_nothing(engine: Engine) -> None:
    block = make_block(100, size=50)
    with pytest.raises(BlockRefusedError, match="test block"):
        _load(engine, block, allow_test=False)
    _load(engine, block)
    with pytest.raises(BlockRefusedError, match="already loaded"):
        _load(engine, block)
    tampered_lots = block.lots_cents.copy()
    tampered_lots[0] += 100
    with pytest.raises(BlockRefusedError, match="fails verification"):
        _load(
            engine, BlockData(replace(block.manifest, block_number=9), block.units, tampered_lots)
        )
    with make_sessionmaker(engine)() as session:
        assert session.execute(select(func.count()).select_from(Block)).scalar_one() == 1
        assert session.execute(select(func.count()).select_from(UnitRow)).scalar_one() == 50
        assert run_audit(connection=session.connection()).ok


def test_load_file(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "block.parquet"
    write_block(make_block(300, size=40, number=2), path)
    with make_sessionmaker(engine).begin() as session:
        block_id = loading.load_block_file(
            session=session, path=path, allow_test=True, actor="test", now=utcnow()
        )
        with pytest.raises(BlockRefusedError, match="no such file"):
            loading.load_block_file(
                session=session, path=tmp_path / "none", allow_test=True, actor="t", now=utcnow()
            )
        (tmp_path / "junk.parquet").write_bytes(b"not parquet")
        with pytest.raises(BlockRefusedError, match="not a readable block file"):
            loading.load_block_file(
                session=session,
                path=tmp_path / "junk.parquet",
                allow_test=True,
                actor="t",
                now=utcnow(),
            )
    assert _states(engine) == {block_id: "loaded"}  # until an auditor approves it


def test_one_open_block_per_price_and_deactivation(engine: Engine, load: BlockLoader) -> None:
    a = load(100, size=20, number=1)
    b = load(100, size=20, number=2)
    c = load(200, size=20, number=1)
    assert _states(engine) == {a: "open", b: "loaded", c: "open"}
    with make_sessionmaker(engine).begin() as session:
        with pytest.raises(InvalidError):
            blocks.deactivate(session=session, block_id=a, reason="  ", actor="t", now=utcnow())
        with pytest.raises(NotFoundError):
            blocks.deactivate(session=session, block_id=99, reason="x", actor="t", now=utcnow())
        blocks.deactivate(session=session, block_id=a, reason="misprint", actor="t", now=utcnow())
        with pytest.raises(ConflictError):
            blocks.deactivate(session=session, block_id=a, reason="again", actor="t", now=utcnow())
        listed = {s.block_id: s for s in blocks.list_blocks(connection=session.connection())}
        assert listed[a].deactivation_reason == "misprint"
        assert run_audit(connection=session.connection()).ok
    assert _states(engine) == {a: "deactivated", b: "open", c: "open"}


def test_deactivation_is_the_callers_to_commit(engine: Engine, load: BlockLoader) -> None:
    a = load(100, size=20, number=1)
    b = load(100, size=20, number=2)
    with make_sessionmaker(engine)() as session:
        blocks.deactivate(session=session, block_id=a, reason="misprint", actor="t", now=utcnow())
        assert session.in_transaction()
        assert {
            s.block_id: s.state for s in blocks.list_blocks(connection=session.connection())
        } == {
            a: "deactivated",
            b: "open",
        }
        session.rollback()
    assert _states(engine) == {a: "open", b: "loaded"}
    with make_sessionmaker(engine)() as session:
        assert run_audit(connection=session.connection()).ok


@pytest.mark.slow
def test_a_real_block_of_a_million_units(engine: Engine, real_blocks: dict[int, Path]) -> None:
    block = read_block(real_blocks[100])
    block_id = _load(engine, block, allow_test=False)
    with make_sessionmaker(engine)() as session:
        [summary] = blocks.list_blocks(connection=session.connection())
        assert summary.block_id == block_id
        assert summary.block_size == 1_000_000
        assert sum(n for _, n in summary.remaining_lots) == 255_505
        assert sum(lot * n for lot, n in summary.remaining_lots) == 70_000_000
        last = session.execute(
            select(UnitRow.lot_cents).where(UnitRow.block_id == block_id, UnitRow.serial == 10**6)
        ).scalar_one()
        assert last == int(block.lots_cents[-1])
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures
