"""Uncovering grids: the reveals asked for together in one transaction, each with its own
outcome (the writer serves those that wait together as one batch: tests/web/test_database.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.service import plays, sales
from pharaon.service.clock import utcnow
from pharaon.service.errors import InvalidError, NotFoundError
from pharaon.service.orders import Order, SoldPlay
from pharaon.store.engine import make_sessionmaker
from tests.conftest import BlockLoader
from tests.service.helpers import funded_player


@pytest.fixture
def factory(engine: Engine, load: BlockLoader) -> sessionmaker[Session]:
    load(100, size=50)
    return make_sessionmaker(engine)


def _jouer_play(factory: sessionmaker[Session], name: str) -> tuple[int, int]:
    """A player and the id of a play of theirs bought in ``jouer`` (nothing uncovered)."""
    player_id = funded_player(factory, name, 500)
    with factory.begin() as session:
        [sold] = sales.sell(
            session=session, requests=[Order(player_id, 100, Mode.JOUER, "k")], now=utcnow()
        )
    assert isinstance(sold, SoldPlay)
    return player_id, sold.play_id


def test_reveals_asked_together_are_one_transaction_each_with_its_outcome(
    engine: Engine, factory: sessionmaker[Session]
) -> None:
    ana, ana_play = _jouer_play(factory, "ana")
    bob, bob_play = _jouer_play(factory, "bob")
    commits: list[object] = []
    event.listen(engine, "commit", commits.append)
    with factory() as session:
        outcomes = plays.reveal(
            session=session,
            now=utcnow(),
            requests=[
                plays.Reveal(bob, bob_play, 4),
                plays.Reveal(ana, ana_play, 1),
                plays.Reveal(ana, bob_play, 2),  # not hers
                plays.Reveal(ana, ana_play, 5),  # no such grid
                plays.Reveal(ana, ana_play, 1),  # again: changes nothing
            ],
        )
        session.commit()
    assert len(commits) == 1
    bobs, first, not_hers, no_grid, again = outcomes
    assert isinstance(bobs, plays.PlayView)
    assert isinstance(first, plays.PlayView)
    assert [g is not None for g in bobs.grids] == [False, False, False, True]
    assert [g is not None for g in first.grids] == [True, False, False, False]
    assert isinstance(not_hers, NotFoundError)
    assert isinstance(no_grid, InvalidError)
    assert again == first
    with factory() as session, session.begin():
        [bob_now] = plays.reveal(
            session=session, requests=[plays.Reveal(bob, bob_play, 4)], now=utcnow()
        )
    assert isinstance(bob_now, plays.PlayView)
    assert [g is not None for g in bob_now.grids] == [False, False, False, True]


def test_a_grid_read_writes_nothing_and_several_grids_end_a_play_in_one_reveal(
    engine: Engine, factory: sessionmaker[Session]
) -> None:
    ana, play = _jouer_play(factory, "ana")
    bob, _ = _jouer_play(factory, "bob")
    commits: list[object] = []
    event.listen(engine, "commit", commits.append)
    with engine.connect() as connection:
        asked = [plays.GridAsked(ana, play, g) for g in (1, 2, 3, 4)] + [
            plays.GridAsked(bob, play, 1),  # not his
            plays.GridAsked(ana, play + 1, 1),  # bob's
            plays.GridAsked(ana, play, 0),
            plays.GridAsked(ana, play, 5),
        ]
        statements: list[object] = []
        event.listen(connection, "before_cursor_execute", lambda *a: statements.append(a[2]))
        *answers, not_his, not_hers, zero, five = plays.grid_codes(
            connection=connection, requests=asked, now=utcnow()
        )
        # One statement for every request of the batch (SQLite's BEGIN aside).
        assert [str(s)[:6] for s in statements if not str(s).startswith("BEGIN")] == ["SELECT"]
        assert isinstance(not_his, NotFoundError)
        assert isinstance(not_hers, NotFoundError)
        assert isinstance(zero, InvalidError)
        assert isinstance(five, InvalidError)
        codes = [a for a in answers if isinstance(a, str)]
        assert len(codes) == 4
        unchanged = plays.view_play(connection=connection, player_id=ana, play_id=play)
    assert commits == []
    assert unchanged.grids == (None,) * 4
    assert all(len(c) == 16 for c in codes)
    with factory() as session, session.begin():
        partial, ended, wrong_grid = plays.reveal(
            session=session,
            now=utcnow(),
            requests=[
                plays.Reveal(bob, play, 1, (2, 3, 4)),  # not his
                plays.Reveal(ana, play, 4, (1, 2, 3)),
                plays.Reveal(ana, play, 1, (6,)),
            ],
        )
    assert isinstance(partial, NotFoundError)
    assert isinstance(ended, plays.PlayView)
    assert ended.finished
    assert ended.grids == tuple(codes)
    assert ended.ticket == "-".join(codes)
    assert isinstance(wrong_grid, InvalidError)
