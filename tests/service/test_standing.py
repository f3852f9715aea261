"""A player's standing (GET /me) in one read: balance, limits in force, self-exclusion."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, update

from pharaon.service import limits, standing
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Player
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player


def _look_up(engine: Engine, player_id: int, hours_later: float = 0) -> standing.Standing:
    db = Transactions(engine)
    try:
        return db.read(
            standing.look_up, player_id=player_id, now=utcnow() + timedelta(hours=hours_later)
        )
    finally:
        db.close()


def test_a_new_player_has_a_balance_and_no_limits(engine: Engine) -> None:
    player_id = funded_player(make_sessionmaker(engine), "new", 0, moderators=False)
    found = _look_up(engine, player_id)
    assert found.balance_cents == 0
    assert found.limits == limits.Limits(None, None, None, ())
    assert not found.limits.moderators_set
    assert found.self_excluded_until is None
    funded = _look_up(engine, funded_player(make_sessionmaker(engine), "funded", 1_234))
    assert funded.balance_cents == 1_234
    assert (funded.limits.weekly_cents, funded.limits.stake_weekly_cents) == (10**9, 10**9)
    assert funded.limits.moderators_set


def test_the_limits_in_force_and_the_raises_waiting(engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    player_id = funded_player(sessions, "limited", 0, moderators=False)
    with sessions() as session, session.begin():
        # Then a raise of the daily limit, and a lower monthly one.
        for daily, monthly in ((1_000, 9_000), (2_000, 8_000)):
            limits.set_limits(
                session=session,
                player_id=player_id,
                changes={"daily": daily, "weekly": None, "monthly": monthly},
                now=utcnow(),
            )
    found = _look_up(engine, player_id)
    assert (found.limits.daily_cents, found.limits.weekly_cents) == (1_000, None)
    assert found.limits.monthly_cents == 8_000
    [waiting] = found.limits.pending
    assert (waiting.period, waiting.amount_cents) == ("daily", 2_000)
    with sessions() as session:
        assert found.limits == limits.get_limits(
            connection=session.connection(), player_id=player_id, now=utcnow()
        )
    later = _look_up(engine, player_id, hours_later=49)  # the raise is in force
    assert later.limits == limits.Limits(2_000, None, 8_000, ())


def test_a_self_exclusion_shows_until_it_ends(engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    player_id = funded_player(sessions, "excluded", 0)
    with sessions() as session, session.begin():
        until = limits.self_exclude(session=session, player_id=player_id, days=2, now=utcnow())
    assert _look_up(engine, player_id).self_excluded_until == until
    assert _look_up(engine, player_id, hours_later=49).self_excluded_until is None


def test_an_unknown_player_is_not_found(engine: Engine) -> None:
    funded_player(make_sessionmaker(engine), "someone", 0)
    with pytest.raises(NotFoundError):
        _look_up(engine, 999_999)


def test_it_reads_the_last_commit(engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    player_id = funded_player(sessions, "changing", 0)
    with sessions() as session:
        session.execute(
            update(Player).where(Player.id == player_id).values(self_excluded_until=utcnow())
        )
        # Not committed yet: the reader sees the row as it was.
        assert _look_up(engine, player_id, hours_later=-1).self_excluded_until is None
        session.commit()
    assert _look_up(engine, player_id, hours_later=-1).self_excluded_until is not None
