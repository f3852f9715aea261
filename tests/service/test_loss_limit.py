"""The weekly loss limit (docs/rules.md §6), checked by the sale on both databases."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine

from pharaon.game.modes import Mode
from pharaon.service import limits, plays
from pharaon.service.clock import utcnow
from pharaon.service.errors import LossLimitReachedError, ServiceError
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from tests.conftest import BlockLoader
from tests.service.helpers import Outcome, buy, funded_player


def _buy(engine: Engine, player_id: int, key: str, now: datetime) -> Outcome:
    [outcome] = buy(make_sessionmaker(engine), [Order(player_id, 100, Mode.JOUER, key)], now)
    return outcome


def _scenario(engine: Engine, name: str) -> list[str]:
    """A player with a loss limit of 2.50 €: jouer plays (their lots not yet credited), the
    week's window, then a lot credited at the fourth grid; each outcome summarised."""
    sessions = make_sessionmaker(engine)
    player_id = funded_player(sessions, name, 10_000)
    now = utcnow()
    week_ago = now - timedelta(days=8)
    with sessions() as session, session.begin():
        limits.set_limits(
            session=session,
            player_id=player_id,
            changes={"weekly": 10**9, "loss": 250},  # the moderator, kept
            now=week_ago,
        )
    seen: list[str] = []

    def summary(outcome: Outcome) -> str:
        if isinstance(outcome, ServiceError):
            return f"{outcome.code}: {outcome.detail}"
        return "sold"

    # Eight days ago: two jouer plays, 2 € of loss (their lots wait); a third would pass 2.50 €.
    old = [_buy(engine, player_id, f"old{n}", week_ago) for n in range(3)]
    seen += [summary(o) for o in old]
    # Now the old plays are out of the window: two more, and the third is refused again.
    new = [_buy(engine, player_id, f"new{n}", now) for n in range(3)]
    seen += [summary(o) for o in new]
    first = new[0]
    assert isinstance(first, plays.PlayView)
    with sessions() as session, session.begin():
        for grid in (1, 2, 3, 4):
            [finished] = plays.reveal(
                session=session,
                requests=[plays.Reveal(player_id, first.play_id, grid)],
                now=now,
            )
    assert isinstance(finished, plays.PlayView)
    assert finished.prize_cents is not None
    lot = finished.prize_cents
    # Its lot is now credited: the loss is 200 - lot; the purchase passes if 300 - lot <= 250.
    after = _buy(engine, player_id, "after", now)
    assert isinstance(after, LossLimitReachedError) == (300 - lot > 250), (lot, after)
    if isinstance(after, LossLimitReachedError):
        assert f"a net loss of {200 - lot} cents" in after.detail
    return seen


EXPECTED = [
    "sold",
    "sold",
    "loss_limit: weekly loss limit 250 cents: a net loss of 200 cents over the last 7 days, "
    "a stake of 100 more would pass it",
] * 2


def test_a_stake_past_the_loss_limit_is_refused(engine: Engine, load: BlockLoader) -> None:
    load(100, size=200)
    assert _scenario(engine, "loser") == EXPECTED


def test_raising_the_loss_limit_waits_its_delay(engine: Engine) -> None:
    sessions = make_sessionmaker(engine)
    player_id = funded_player(sessions, "raiser", 0)
    now = utcnow()

    def put(value: int | None, at: datetime) -> limits.Limits:
        with sessions() as session, session.begin():
            return limits.set_limits(
                session=session,
                player_id=player_id,
                changes={"weekly": 10**9, "loss": value},  # the moderator, kept
                now=at,
            )

    assert put(1_000, now).loss_weekly_cents == 1_000
    raised = put(5_000, now)
    assert raised.loss_weekly_cents == 1_000
    assert [(p.period, p.amount_cents) for p in raised.pending] == [("loss", 5_000)]
    assert put(500, now).loss_weekly_cents == 500  # lowering: at once, the raise forgotten
    put(None, now)
    with sessions() as session:
        later = limits.get_limits(
            connection=session.connection(), player_id=player_id, now=now + limits.RAISE_DELAY
        )
    assert later.loss_weekly_cents is None
    with sessions() as session, session.begin():
        kept = limits.set_limits(
            session=session,
            player_id=player_id,
            changes={"daily": 100, "weekly": 10**9},  # the moderator, kept
            now=now + limits.RAISE_DELAY,
        )
    assert (kept.daily_cents, kept.loss_weekly_cents) == (100, None)


def test_a_purchase_refused_for_several_reasons_gets_the_first(engine: Engine) -> None:
    """docs/api.md: loss limit, then self-exclusion, then the balance, then a unit on sale (no
    block is loaded here); on PostgreSQL ``pharaon_sell`` checks them in the same order."""
    sessions = make_sessionmaker(engine)
    now = utcnow()
    players = {name: funded_player(sessions, name, 0) for name in ("all", "excluded", "poor")}
    players["rich"] = funded_player(sessions, "rich", 10_000)
    with sessions() as session, session.begin():
        limits.set_limits(
            session=session,
            player_id=players["all"],
            changes={"weekly": 10**9, "loss": 50},  # the moderator, kept
            now=now,
        )
        for name in ("all", "excluded"):
            limits.self_exclude(session=session, player_id=players[name], days=7, now=now)
    refused: dict[str, str] = {}
    for name, player_id in players.items():
        outcome = _buy(engine, player_id, f"k-{name}", now)
        assert isinstance(outcome, ServiceError), (name, outcome)
        refused[name] = outcome.code
    assert refused == {
        "all": "loss_limit",
        "excluded": "self_excluded",
        "poor": "insufficient_funds",
        "rich": "sold_out",
    }
