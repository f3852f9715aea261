"""The back office's sales report (service/sales_report.py), on both databases: per UTC day and
price, the plays, stakes and lots sold, the payout rate against the planned 70 %, and the
liability, the lots still to be won in the blocks on sale or approved to follow."""

from __future__ import annotations

import secrets
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Engine, func, select

from pharaon.game.modes import Mode
from pharaon.service import approvals, blocks, loading, plays, sales_report
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader, make_block
from tests.service.helpers import buy, funded_player

LATE = datetime(2026, 6, 15, 23, 59, 59, tzinfo=UTC)  # the last second of a UTC day
MIDNIGHT = datetime(2026, 6, 16, tzinfo=UTC)


def _report(db: Transactions, **window: datetime) -> sales_report.SalesReport:
    return db.read(sales_report.sales_report, **window)


def _lots(db: Transactions, *block_ids: int) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(func.sum(UnitRow.lot_cents)).where(UnitRow.block_id.in_(block_ids))
            ).scalar_one()
        )
    )


def _sell(engine: Engine, player_id: int, stakes: list[int], when: datetime) -> list[int]:
    """Auto plays at ``stakes``; their lots."""
    sold = buy(
        make_sessionmaker(engine),
        [Order(player_id, s, Mode.AUTO, secrets.token_hex(8)) for s in stakes],
        when,
    )
    lots = []
    for play in sold:
        assert isinstance(play, plays.PlayView), play
        assert play.prize_cents is not None
        lots.append(play.prize_cents)
    return lots


def test_before_any_sale_the_liability_is_every_lot_on_sale(
    db: Transactions, load: BlockLoader
) -> None:
    one, two = load(100, size=40), load(200, size=40)
    report = _report(db)
    assert report.lines == ()
    assert (report.stakes_cents, report.prizes_cents, report.payout_bp) == (0, 0, None)
    assert report.planned_payout_bp == 7_000  # 70 % of sales (GAME.md §2)
    assert report.liability_cents == _lots(db, one, two) > 0


def test_a_block_counts_in_the_liability_once_approved(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    """A block loaded and waiting for its auditor is no promise yet; approved, it is, whether
    it goes on sale at once or waits behind the block open at its price."""
    on_sale = load(100, size=40)
    with make_sessionmaker(engine).begin() as session:
        waiting = loading.load_block(
            session=session,
            block=make_block(100, size=40, number=2),
            allow_test=True,
            actor="test",
            now=utcnow(),
        )
    assert _report(db).liability_cents == _lots(db, on_sale)
    with make_sessionmaker(engine).begin() as session:
        figures = approvals.verify_loaded(connection=session.connection(), block_id=waiting)
        state = approvals.approve(
            session=session, block_id=waiting, actor="auditor:test", figures=figures, now=utcnow()
        )
    assert state == "loaded"  # behind the open one
    assert _report(db).liability_cents == _lots(db, on_sale, waiting)


def test_lines_per_utc_day_and_price_equal_what_was_sold(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=50)
    load(200, size=50)
    ana = funded_player(make_sessionmaker(engine), "ana", 10_000)
    late_100 = _sell(engine, ana, [100, 100, 100], LATE)
    late_200 = _sell(engine, ana, [200, 200], LATE)
    early_100 = _sell(engine, ana, [100], MIDNIGHT)
    report = _report(db)

    def line(day: date, price: int, lots: list[int]) -> sales_report.SalesLine:
        stakes = price * len(lots)
        return sales_report.SalesLine(
            day, price, len(lots), stakes, sum(lots), sum(lots) * 10_000 // stakes
        )

    assert report.lines == (
        line(date(2026, 6, 15), 100, late_100),
        line(date(2026, 6, 15), 200, late_200),
        line(date(2026, 6, 16), 100, early_100),
    )
    prizes = sum(late_100 + late_200 + early_100)
    assert (report.stakes_cents, report.prizes_cents) == (800, prizes)
    assert report.payout_bp == prizes * 10_000 // 800
    # From (inclusive) and until (exclusive).
    assert _report(db, since=MIDNIGHT).lines == (line(date(2026, 6, 16), 100, early_100),)
    assert len(_report(db, until=MIDNIGHT).lines) == 2
    assert _report(db, until=LATE).lines == ()
    assert _report(db, since=LATE, until=LATE + timedelta(seconds=1)).stakes_cents == 700


def test_the_liability_falls_by_the_lots_sold_and_told(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    block = load(100, size=50)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 10_000)
    units = db.read(
        lambda connection: dict(
            connection.execute(
                select(UnitRow.serial, UnitRow.lot_cents).where(UnitRow.block_id == block)
            ).all()
        )
    )
    winner = min(serial for serial, lot in units.items() if serial > 10 and lot > 0)
    liability = _report(db).liability_cents
    # The units before a winning one (sold in serial order), at least 10 of them.
    lots = _sell(engine, ana, [100] * (winner - 1), LATE)
    assert lots == [units[s] for s in range(1, winner)]
    assert _report(db).liability_cents == liability - sum(lots)
    # A jouer play's lot is still to be told: it stays in the liability until its last grid.
    [jouer] = buy(factory, [Order(ana, 100, Mode.JOUER, "j")], LATE)
    assert isinstance(jouer, plays.PlayView)
    assert jouer.serial == winner
    assert _report(db).liability_cents == liability - sum(lots)
    db.write(
        plays.reveal,
        requests=[plays.Reveal(ana, jouer.play_id, g) for g in (1, 2, 3, 4)],
        now=LATE,
    )
    assert _report(db).liability_cents == liability - sum(lots) - units[winner]
    # A block off sale owes nothing more.
    db.write(blocks.deactivate, block_id=block, reason="test", actor="test", now=LATE)
    assert _report(db).liability_cents == 0
    assert _report(db).stakes_cents == 100 * winner  # its sales stay in the report
