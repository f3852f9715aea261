"""Uncovering grids: the reveals asked for together in one transaction, each with its own
outcome; the reveal desk serves those that wait together as one batch."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.service import plays, sales
from pharaon.service.clock import utcnow
from pharaon.service.errors import InvalidError, NotFoundError, ServiceError
from pharaon.store.engine import make_sessionmaker
from pharaon.web import desk
from tests.conftest import BlockLoader
from tests.service.helpers import another_writer, funded_player

WAIT = 60.0  # seconds: generous, the machine is shared


@pytest.fixture
def factory(engine: Engine, load: BlockLoader) -> sessionmaker[Session]:
    load(100, size=50)
    return make_sessionmaker(engine)


def _jouer_play(factory: sessionmaker[Session], name: str) -> tuple[int, int]:
    """A player and the id of a play of theirs bought in ``jouer`` (nothing uncovered)."""
    player_id = funded_player(factory, name, 500)
    with factory.begin() as session:
        [sold] = sales.sell_many(
            session=session, orders=[sales.Order(player_id, 100, Mode.JOUER, "k")], now=utcnow()
        )
    assert isinstance(sold, sales.SoldPlay)
    return player_id, sold.play_id


def test_reveals_asked_together_are_one_transaction_each_with_its_outcome(
    engine: Engine, factory: sessionmaker[Session]
) -> None:
    ana, ana_play = _jouer_play(factory, "ana")
    bob, bob_play = _jouer_play(factory, "bob")
    commits: list[object] = []
    event.listen(engine, "commit", commits.append)
    with factory() as session:
        outcomes = plays.reveal_many(
            session=session,
            reveals=[
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
        [bob_now] = plays.reveal_many(session=session, reveals=[plays.Reveal(bob, bob_play, 4)])
    assert isinstance(bob_now, plays.PlayView)
    assert [g is not None for g in bob_now.grids] == [False, False, False, True]


def test_the_reveal_desk_uncovers_what_waits_together_in_one_batch(
    monkeypatch: pytest.MonkeyPatch, factory: sessionmaker[Session]
) -> None:
    players = [_jouer_play(factory, f"p{n}") for n in range(4)]
    sizes: list[int] = []
    entered, opened = threading.Event(), threading.Event()
    real = plays.reveal_many

    def held(
        *, session: Session, reveals: Sequence[plays.Reveal]
    ) -> list[plays.PlayView | ServiceError]:
        sizes.append(len(reveals))
        if len(sizes) == 1:
            entered.set()
            assert opened.wait(WAIT)
        return real(session=session, reveals=reveals)

    monkeypatch.setattr(plays, "reveal_many", held)
    uncover = desk.RevealDesk(factory)
    try:
        first = uncover.submit(plays.Reveal(*players[0], 1))
        assert entered.wait(WAIT)
        rest = [uncover.submit(plays.Reveal(p, play, 2)) for p, play in players[1:]]
        opened.set()
        assert first.result(WAIT).grids[0] is not None
        for answer in rest:
            assert answer.result(WAIT).grids[1] is not None
    finally:
        uncover.close()
    assert sizes == [1, 3]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_reveals_that_arrive_while_the_desk_waits_for_the_writer_lock_join_its_batch(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, factory: sessionmaker[Session]
) -> None:
    players = [_jouer_play(factory, f"p{n}") for n in range(4)]
    sizes: list[int] = []
    real = plays.reveal_many

    def counted(
        *, session: Session, reveals: Sequence[plays.Reveal]
    ) -> list[plays.PlayView | ServiceError]:
        sizes.append(len(reveals))
        return real(session=session, reveals=reveals)

    monkeypatch.setattr(plays, "reveal_many", counted)
    uncover = desk.RevealDesk(factory)
    try:
        with another_writer(engine) as beginning:
            first = uncover.submit(plays.Reveal(*players[0], 1))
            beginning()
            rest = [uncover.submit(plays.Reveal(p, play, 1)) for p, play in players[1:]]
        for answer in [first, *rest]:
            assert answer.result(WAIT).grids[0] is not None
    finally:
        uncover.close()
    assert sizes == [4]
