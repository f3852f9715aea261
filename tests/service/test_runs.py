"""A block's sale order sold in runs (service/runs.py): on both databases, each unit sold once
and none skipped at the block's end; on PostgreSQL, two sales at once take two runs, neither
waiting for the other."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from sqlalchemy import Connection, Engine, select
from sqlalchemy.orm import Session

from pharaon.service import runs
from pharaon.service.audit import run_audit
from pharaon.service.blocks import sold_units
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Block, SaleRun
from tests.conftest import load_for_sale, make_block

WAIT = 60.0


def _runs_cover_the_blocks(connection: Connection) -> bool:
    """The audit's check of the runs (units are taken here without plays, which the audit's
    other checks would miss)."""
    checks = {check.code: check.passed for check in run_audit(connection=connection).checks}
    return checks["block_sizes"]


def _load(engine: Engine, *, size: int, sale_runs: int, number: int = 1) -> int:
    return load_for_sale(engine, make_block(100, size=size, number=number), sale_runs=sale_runs)


def _take(engine: Engine, count: int) -> list[tuple[int, int]]:
    with make_sessionmaker(engine).begin() as session:
        return runs.take(session, price_cents=100, count=count)


@pytest.mark.parametrize(("size", "k"), [(10, 3), (7, 7), (5, 8), (1_000_000, 8), (100, 1)])
def test_runs_cut_the_sale_order_each_unit_once(size: int, k: int) -> None:
    cut = runs.cut(size, k)
    assert len(cut) == min(size, k)
    serials = [s for first, last in cut for s in range(first, last + 1)]
    assert serials == list(range(1, size + 1))
    lengths = [last - first + 1 for first, last in cut]
    assert max(lengths) - min(lengths) <= 1


@pytest.mark.parametrize("bad", [(0, 1), (5, 0)])
def test_a_cut_needs_units_and_runs(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="units and runs"):
        runs.cut(*bad)


def test_one_sale_at_a_time_sells_in_serial_order(engine: Engine) -> None:
    """With no sale beside it, a sale takes the first run left: the block sells in its order,
    across the runs' ends, then the next block opens."""
    first = _load(engine, size=16, sale_runs=3)
    second = _load(engine, size=16, sale_runs=3, number=2)
    taken = _take(engine, 4) + _take(engine, 11) + _take(engine, 3)
    assert taken == [(first, s) for s in range(1, 17)] + [(second, 1), (second, 2)]
    with engine.connect() as connection:
        states = dict(connection.execute(select(Block.id, Block.state)).all())
        assert sold_units(connection) == {first: 16, second: 2}
        assert _runs_cover_the_blocks(connection)
    assert states == {first: "sold_out", second: "open"}
    assert _take(engine, 20) == [(second, s) for s in range(3, 17)]  # then sold out
    assert _take(engine, 1) == []


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_sales_at_once_take_two_runs(engine: Engine) -> None:
    block = _load(engine, size=18, sale_runs=3)
    sessions: Callable[[], Session] = make_sessionmaker(engine)
    holding, done = threading.Event(), threading.Event()
    firsts: list[list[tuple[int, int]]] = []

    def first_sale() -> None:
        with sessions() as session, session.begin():
            firsts.append(runs.take(session, price_cents=100, count=2))
            holding.set()
            assert done.wait(WAIT)  # its run stays locked until then

    holder = threading.Thread(target=first_sale)
    holder.start()
    assert holding.wait(WAIT)
    beside = _take(engine, 2)  # does not wait for the first: SKIP LOCKED takes another run
    done.set()
    holder.join()
    assert firsts == [[(block, 1), (block, 2)]]
    assert beside == [(block, 7), (block, 8)]
    # To the end: each unit once, none skipped.
    rest = _take(engine, 100)
    serials = sorted(s for _, s in firsts[0] + beside + rest)
    assert serials == list(range(1, 19))
    with engine.connect() as connection:
        left = connection.execute(
            select(SaleRun.run).where(SaleRun.next_serial <= SaleRun.last_serial)
        ).all()
        assert left == []
        assert _runs_cover_the_blocks(connection)
