"""The moderators and the stake limits (service/limits.py, docs/rules.md §6), on both databases:
no deposit and no stake before the weekly deposit and stake ceilings are set, the moderators
never removed, raises after the delay, and the stake limits counted by the sale from the
players' stakes per hour."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, Engine, delete, func, select

from pharaon.game.modes import Mode
from pharaon.service import limits, plays, wallet
from pharaon.service.errors import (
    InvalidError,
    ModeratorsRequiredError,
    ServiceError,
    StakeLimitReachedError,
)
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Deposit, DepositLimit, PlayRow, StakeHour
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import Outcome, buy, funded_player, set_moderators

T0 = datetime(2026, 6, 15, 12, 30, tzinfo=UTC)
BIG = 10**9


def _set(
    db: Transactions,
    player_id: int,
    now: datetime,
    *,
    weekly: int | None = BIG,
    stakes: Mapping[str, int | None] | None = None,
    raise_delay: timedelta = limits.RAISE_DELAY,
) -> limits.Limits:
    return db.write(
        limits.set_limits,
        player_id=player_id,
        changes={"weekly": weekly, **(stakes or {})},
        raise_delay=raise_delay,
        now=now,
    )


def _deposit(db: Transactions, player_id: int, cents: int, key: str) -> int:
    return db.write(
        wallet.deposit, player_id=player_id, amount_cents=cents, idempotency_key=key, now=T0
    ).balance_cents


def _sell(engine: Engine, orders: list[Order], now: datetime) -> list[Outcome]:
    return buy(make_sessionmaker(engine), orders, now)


def test_no_deposit_before_both_moderators_and_nothing_changes(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0, moderators=False)
    with pytest.raises(ModeratorsRequiredError) as refused:
        _deposit(db, ana, 1_000, "first")
    assert refused.value.code == "moderators_required"
    assert "weekly deposit ceiling and a weekly stake ceiling" in refused.value.detail
    _set(db, ana, T0, weekly=5_000)  # one of the two is not enough
    with pytest.raises(ModeratorsRequiredError):
        _deposit(db, ana, 1_000, "first")
    deposits = db.read(
        lambda connection: connection.execute(select(func.count()).select_from(Deposit)).scalar()
    )
    assert deposits == 0
    assert db.read(limits.get_limits, player_id=ana, now=T0).moderators_set is False
    # The same key, once the moderators are set: taken, not a replay of a refusal.
    _set(db, ana, T0, weekly=5_000, stakes={"stake_weekly": 2_000})
    assert db.read(limits.get_limits, player_id=ana, now=T0).moderators_set is True
    assert _deposit(db, ana, 1_000, "first") == 1_000


def test_no_stake_before_the_moderators(engine: Engine, load: BlockLoader) -> None:
    load(100, size=50)
    sessions = make_sessionmaker(engine)
    ana = funded_player(sessions, "ana", 0, moderators=False)
    # Money that came in before the rule (an account older than the moderators).
    with sessions() as session, session.begin():
        set_moderators(session, ana)
        wallet.deposit(
            session=session, player_id=ana, amount_cents=500, idempotency_key="old", now=T0
        )
        # The moderators gone, as for an account opened before them.
        session.execute(delete(DepositLimit).where(DepositLimit.player_id == ana))
    [refused] = _sell(engine, [Order(ana, 100, Mode.AUTO, "a")], T0)
    assert isinstance(refused, ModeratorsRequiredError), refused
    with sessions() as session, session.begin():
        set_moderators(session, ana)
    [sold] = _sell(engine, [Order(ana, 100, Mode.AUTO, "a")], T0)
    assert isinstance(sold, plays.PlayView), sold


def test_the_moderators_may_be_lowered_at_once_raised_later_never_removed(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0, moderators=False)
    assert _set(db, ana, T0, weekly=None).moderators_set is False  # none set: nothing removed
    _set(db, ana, T0, weekly=5_000, stakes={"stake_weekly": 2_000})
    for weekly, stakes in ((None, None), (5_000, {"stake_weekly": None})):
        with pytest.raises(InvalidError, match="is a moderator: it may be lowered or raised"):
            _set(db, ana, T0, weekly=weekly, stakes=stakes)
    lowered = _set(db, ana, T0, weekly=4_000, stakes={"stake_weekly": 1_000})
    assert (lowered.weekly_cents, lowered.stake_weekly_cents, lowered.pending) == (4_000, 1_000, ())
    hour = timedelta(hours=1)  # the delay is the caller's (PHARAON_LIMIT_RAISE_HOURS)
    raised = _set(db, ana, T0, weekly=4_000, stakes={"stake_weekly": 3_000}, raise_delay=hour)
    assert raised.stake_weekly_cents == 1_000
    assert raised.pending == (limits.Pending("stake_weekly", 3_000, T0 + hour),)
    later = db.read(limits.get_limits, player_id=ana, now=T0 + hour)
    assert (later.stake_weekly_cents, later.pending) == (3_000, ())


def test_a_weekly_stake_limit_counts_the_stakes_of_its_hours(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=60)
    load(200, size=60)
    ana = funded_player(make_sessionmaker(engine), "ana", 10_000)
    _set(db, ana, T0 - timedelta(days=10), stakes={"stake_weekly": 500})
    day = T0 - timedelta(days=6, hours=23)
    sold = _sell(engine, [Order(ana, 200, Mode.AUTO, f"old{n}") for n in range(1)], day)
    assert isinstance(sold[0], plays.PlayView)
    outcomes = [_sell(engine, [Order(ana, 100, Mode.AUTO, f"now{n}")], T0)[0] for n in range(4)]
    # 200 a week ago, then 100 at a time: 300 more reach 500, the fourth would pass it.
    assert [isinstance(o, plays.PlayView) for o in outcomes] == [True, True, True, False]
    refused = outcomes[3]
    assert isinstance(refused, StakeLimitReachedError)
    assert refused.detail == (
        "stake limit 500 cents per 7 days: 500 cents staked in the period, "
        "a stake of 100 more would pass it"
    )
    # The old stake's hour leaves the window a whole week after its hour began.
    week_later = limits.hour_of(day) + timedelta(days=7, hours=1)
    [again] = _sell(engine, [Order(ana, 100, Mode.AUTO, "now3")], week_later - timedelta(hours=1))
    assert isinstance(again, StakeLimitReachedError)
    [sold_later] = _sell(engine, [Order(ana, 100, Mode.AUTO, "later")], week_later)
    assert isinstance(sold_later, plays.PlayView), sold_later


@pytest.mark.parametrize(("period", "span"), list(limits.STAKE_PERIODS.items()))
def test_each_stake_limit_counts_its_own_window(
    engine: Engine, db: Transactions, load: BlockLoader, period: str, span: timedelta
) -> None:
    load(100, size=60)
    ana = funded_player(make_sessionmaker(engine), "ana", 10_000)
    stakes = {period: 200} if period == "stake_weekly" else {period: 200, "stake_weekly": BIG}
    _set(db, ana, T0 - timedelta(days=40), stakes=stakes)
    first = _sell(engine, [Order(ana, 100, Mode.AUTO, "a"), Order(ana, 100, Mode.AUTO, "b")], T0)
    assert all(isinstance(o, plays.PlayView) for o in first), first  # one batch, both counted
    [refused] = _sell(engine, [Order(ana, 100, Mode.AUTO, "c")], T0 + span)
    assert isinstance(refused, StakeLimitReachedError), refused
    [sold] = _sell(engine, [Order(ana, 100, Mode.AUTO, "c")], T0 + span + timedelta(hours=1))
    assert isinstance(sold, plays.PlayView), sold


def test_stakes_are_added_once_per_sale_not_per_retry(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=60)
    ana = funded_player(make_sessionmaker(engine), "ana", 10_000)
    bob = funded_player(make_sessionmaker(engine), "bob", 50)
    orders = [
        Order(ana, 100, Mode.AUTO, "k1"),
        Order(ana, 100, Mode.JOUER, "k2"),
        Order(ana, 100, Mode.AUTO, "k1"),  # the retry of k1
        Order(bob, 100, Mode.AUTO, "poor"),  # refused: 50 cents
    ]
    outcomes = _sell(engine, orders, T0)
    assert [type(o).__name__ for o in outcomes] == [
        "PlayView",
        "PlayView",
        "PlayView",
        "InsufficientFundsError",
    ]

    def hours(connection: Connection) -> list[tuple[int, datetime, int]]:
        rows = connection.execute(
            select(StakeHour.player_id, StakeHour.hour, StakeHour.stakes_cents)
        )
        return [(int(p), h, int(c)) for p, h, c in rows]

    assert db.read(hours) == [(ana, limits.hour_of(T0), 200)]
    staked = db.read(
        lambda connection: connection.execute(
            select(func.sum(PlayRow.stake_cents)).where(PlayRow.player_id == ana)
        ).scalar()
    )
    assert staked == 200


def test_the_stake_refusal_s_arithmetic() -> None:
    row = ("stake_daily", 500, None, None)
    assert limits.stake_refusal(row, 400, 100, T0) is None  # to the limit exactly
    refused = limits.stake_refusal(row, 401, 100, T0)
    assert isinstance(refused, ServiceError)
    assert "per 24 hours: 401 cents staked" in refused.detail
    assert limits.stake_refusal(("stake_daily", None, None, None), 10**6, 100, T0) is None
    waiting = ("stake_monthly", 500, 1_000, T0 + timedelta(hours=1))
    assert isinstance(limits.stake_refusal(waiting, 450, 100, T0), StakeLimitReachedError)
    assert limits.stake_refusal(waiting, 450, 100, T0 + timedelta(hours=1)) is None
    assert limits.hour_of(T0) == datetime(2026, 6, 15, 12, tzinfo=UTC)
    assert limits.stake_window_start(T0, timedelta(days=7)) == datetime(2026, 6, 8, 12, tzinfo=UTC)
