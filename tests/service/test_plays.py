"""Plays as the player sees them (service/plays.py), on both databases: a « Jouer » play shows
each grid once uncovered and its lot only at the fourth, credited then and only once; an
« Auto » play shows all; the history pages newest first. (Reveals batched together:
test_reveal.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from pharaon.game.evaluate import evaluate
from pharaon.game.modes import Mode
from pharaon.game.unit import Unit
from pharaon.service import plays, wallet
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import InvalidError, NotFoundError
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import PENDING_ACCOUNT, Account, LedgerTransaction, UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player

Open = Callable[[], Session]


def _units(db: Transactions, block_id: int) -> dict[int, tuple[Unit, int]]:
    """The block's units by serial: each one's unit and lot."""
    return db.read(
        lambda connection: {
            int(serial): (Unit(tuple(bytes(cells))), int(lot))
            for serial, cells, lot in connection.execute(
                select(UnitRow.serial, UnitRow.cells, UnitRow.lot_cents).where(
                    UnitRow.block_id == block_id
                )
            )
        }
    )


def _buy(factory: Open, player_id: int, mode: Mode, key: str) -> plays.PlayView:
    [play] = buy(factory, [Order(player_id, 100, mode, key)])
    assert isinstance(play, plays.PlayView), play
    return play


def _reveal(db: Transactions, player_id: int, play_id: int, *grids: int) -> plays.PlayView:
    outcomes = db.write(
        plays.reveal,
        requests=[plays.Reveal(player_id, play_id, g) for g in grids],
        now=utcnow(),
    )
    assert all(isinstance(o, plays.PlayView) for o in outcomes), outcomes
    last = outcomes[-1]
    assert isinstance(last, plays.PlayView)
    return last


def _pending(db: Transactions) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(Account.balance_cents).where(Account.id == PENDING_ACCOUNT)
            ).scalar_one()
        )
    )


def _prize_transactions(db: Transactions) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(func.count())
                .select_from(LedgerTransaction)
                .where(LedgerTransaction.kind == "prize")
            ).scalar_one()
        )
    )


def test_a_jouer_play_shows_each_grid_once_uncovered_and_credits_its_lot_at_the_fourth(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    block = load(100, size=50)
    units = _units(db, block)
    winner = min(s for s, (_, lot) in units.items() if lot > 0)
    factory = make_sessionmaker(engine)
    filler = funded_player(factory, "filler", 10_000)
    for n in range(winner - 1):  # sold in serial order: the next unit is the winner
        _buy(factory, filler, Mode.AUTO, f"f{n}")
    ana = funded_player(factory, "ana", 1_000)
    play = _buy(factory, ana, Mode.JOUER, "k")
    unit, lot = units[winner]
    assert (play.block_id, play.serial, play.mode) == (block, winner, Mode.JOUER)
    assert play.grids == (None, None, None, None)
    assert (play.finished, play.prize_cents, play.bonus, play.ticket) == (False, None, None, None)
    assert (play.balance_before_cents, play.balance_after_cents) == (1_000, None)
    assert db.write(wallet.balance, player_id=ana) == 900
    pending = _pending(db)
    prizes = _prize_transactions(db)

    third = _reveal(db, ana, play.play_id, 3)
    assert third.grids == (None, None, unit.grid_codes(2), None)
    assert third.prize_cents is None
    last = _reveal(db, ana, play.play_id, 1, 4, 2)
    assert last.grids == tuple(unit.grid_codes(g) for g in range(4))
    assert last.finished
    assert (last.prize_cents, last.ticket) == (lot, unit.ticket)
    assert last.balance_after_cents == 900 + lot
    assert db.write(wallet.balance, player_id=ana) == 900 + lot
    assert _pending(db) == pending - lot
    assert _prize_transactions(db) == prizes + 1
    # Uncovering again credits nothing more.
    assert _reveal(db, ana, play.play_id, 4, 1) == last
    assert db.write(wallet.balance, player_id=ana) == 900 + lot
    assert _prize_transactions(db) == prizes + 1
    assert db.read(lambda connection: run_audit(connection=connection).failures) == []


def test_an_auto_play_shows_everything_at_once(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    block = load(100, size=50)
    units = _units(db, block)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    balance = 1_000
    for n in range(8):
        play = _buy(factory, ana, Mode.AUTO, f"k{n}")
        unit, lot = units[play.serial]
        assert play.finished
        assert play.grids == tuple(unit.grid_codes(g) for g in range(4))
        assert play.prize_cents == lot
        combinations = play.combinations or ()
        assert sum(c["gain_cents"] for c in combinations) == lot
        assert combinations == tuple(c.as_json() for c in evaluate(unit, 100).combinations)
        assert play.bonus is not None
        assert len(play.bonus) == 16
        assert play.ticket == unit.ticket
        assert play.balance_before_cents == balance
        balance += lot - 100
        assert play.balance_after_cents == balance
        assert db.read(plays.view_play, player_id=ana, play_id=play.play_id) == play
    assert db.write(wallet.balance, player_id=ana) == balance


def test_a_play_is_its_player_s_only(engine: Engine, db: Transactions, load: BlockLoader) -> None:
    load(100, size=50)
    factory = make_sessionmaker(engine)
    ana, bob = funded_player(factory, "ana", 1_000), funded_player(factory, "bob", 1_000)
    play = _buy(factory, ana, Mode.JOUER, "k")
    for player_id, play_id in ((bob, play.play_id), (ana, play.play_id + 1_000)):
        with pytest.raises(NotFoundError):
            db.read(plays.view_play, player_id=player_id, play_id=play_id)
    outcomes = db.write(
        plays.reveal,
        requests=[
            plays.Reveal(bob, play.play_id, 1),
            plays.Reveal(ana, play.play_id, 0),
            plays.Reveal(ana, play.play_id, 5),
        ],
        now=utcnow(),
    )
    assert [type(o) for o in outcomes] == [NotFoundError, InvalidError, InvalidError]
    # None of them uncovered anything.
    assert db.read(plays.view_play, player_id=ana, play_id=play.play_id).grids == (None,) * 4


def test_the_history_pages_newest_first(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=50)
    factory = make_sessionmaker(engine)
    ana, bob = funded_player(factory, "ana", 1_000), funded_player(factory, "bob", 1_000)
    mine = []
    for n in range(5):
        mine.append(_buy(factory, ana, Mode.AUTO if n % 2 else Mode.JOUER, f"a{n}").play_id)
        _buy(factory, bob, Mode.AUTO, f"b{n}")
    pages: list[list[int]] = []
    before: int | None = None
    while True:
        views, before = db.read(plays.history, player_id=ana, limit=2, before=before)
        pages.append([v.play_id for v in views])
        if before is None:
            break
    assert pages == [mine[:2:-1], mine[2:0:-1], mine[:1]]
    views, after = db.read(plays.history, player_id=ana, limit=100, before=None)
    assert ([v.play_id for v in views], after) == (mine[::-1], None)
    assert [v.finished for v in views] == [False, True, False, True, False]
    views, after = db.read(plays.history, player_id=ana, limit=5, before=None)
    assert (len(views), after) == (5, None)  # exactly a page: no next one


@pytest.mark.parametrize("limit", [0, -1, 101])
def test_a_history_page_holds_1_to_100_plays(db: Transactions, limit: int) -> None:
    with pytest.raises(InvalidError):
        db.read(plays.history, player_id=1, limit=limit, before=None)
