"""Responsible gaming (service/limits.py), on both databases: deposit limits over their
windows, a lowered limit at once and a raised or removed one only after the raise delay (48
hours), the loss limit's arithmetic, the stake and loss limits' boundaries at the sale (reached
exactly: sold; a cent past: refused), and a self-exclusion that is never shortened. (The loss
limit at the sale: test_loss_limit.py; the moderators and the stake limits:
test_moderators.py; the limits as GET /me shows them: test_standing.py.)"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, Engine, literal, select

from pharaon.game.modes import Mode
from pharaon.service import limits, plays, protection, sales, wallet
from pharaon.service.errors import (
    DepositLimitReachedError,
    InvalidError,
    LossLimitReachedError,
    SelfExcludedError,
    StakeLimitReachedError,
)
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Account, AuditRecord, UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import Outcome, buy, funded_player

T0 = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
DAY = timedelta(hours=24)
RAISE = limits.RAISE_DELAY
MODERATOR = 10**9  # a weekly ceiling far above what these tests deposit


def _player(engine: Engine) -> int:
    """A new player with no limit at all: not even the moderators, which these tests set."""
    return funded_player(make_sessionmaker(engine), "ana", 0, moderators=False)


def _set(db: Transactions, player_id: int, now: datetime, **changes: int | None) -> limits.Limits:
    """Set the limits named (by period: daily, .., stake_daily, .., loss), the others left."""
    return db.write(limits.set_limits, player_id=player_id, changes=changes, now=now)


def _get(db: Transactions, player_id: int, now: datetime) -> limits.Limits:
    return db.read(limits.get_limits, player_id=player_id, now=now)


def _deposit(db: Transactions, player_id: int, cents: int, now: datetime) -> int:
    return db.write(
        wallet.deposit,
        player_id=player_id,
        amount_cents=cents,
        idempotency_key=f"{cents}@{now.isoformat()}",
        now=now,
    ).balance_cents


def test_a_lower_limit_applies_at_once_a_higher_one_after_48_hours(
    engine: Engine, db: Transactions
) -> None:
    ana = _player(engine)
    assert _set(db, ana, T0, daily=1_000, monthly=9_000) == limits.Limits(
        1_000, None, 9_000, (), None
    )
    later = T0 + timedelta(hours=1)
    # Raise the daily, lower the monthly, remove nothing, set none weekly.
    raised = _set(db, ana, later, daily=2_000, monthly=8_000)
    assert raised == limits.Limits(
        1_000, None, 8_000, (limits.Pending("daily", 2_000, later + RAISE),), None
    )
    assert _get(db, ana, later + RAISE - timedelta(microseconds=1)) == raised
    assert _get(db, ana, later + RAISE) == limits.Limits(2_000, None, 8_000, ())
    # Asking the same raise again does not start its delay anew.
    assert _set(db, ana, later + timedelta(hours=5), daily=2_000, monthly=8_000) == raised
    # Removing a limit is a raise too: it waits; lowering it instead cancels the wait.
    removal = _set(db, ana, later + timedelta(hours=6), daily=1_000, monthly=None)
    assert removal.monthly_cents == 8_000
    assert removal.daily_cents == 1_000
    removed_at = later + timedelta(hours=6) + RAISE
    assert removal.pending == (limits.Pending("monthly", None, removed_at),)
    assert _get(db, ana, removed_at).monthly_cents is None


def test_negative_limits_are_refused_and_change_nothing(engine: Engine, db: Transactions) -> None:
    ana = _player(engine)
    _set(db, ana, T0, weekly=5_000)
    for bad in ({"daily": -1}, {"monthly": -100}, {"loss": -1}, {"yearly": 100}):
        with pytest.raises(InvalidError):
            _set(db, ana, T0, **{"daily": 1, "weekly": 1, "monthly": 1, **bad})
    assert _get(db, ana, T0) == limits.Limits(None, 5_000, None, ())
    assert _set(db, ana, T0, daily=0, weekly=5_000).daily_cents == 0  # zero: no deposit at all


def test_the_loss_limit_is_kept_unless_given_and_each_change_is_audited(
    engine: Engine, db: Transactions
) -> None:
    ana = _player(engine)
    _set(db, ana, T0, daily=100, loss=250)
    kept = _set(db, ana, T0, daily=50)
    assert (kept.daily_cents, kept.loss_weekly_cents) == (50, 250)
    raised = _set(db, ana, T0, daily=50, loss=300)  # a raise of the loss limit waits too
    assert raised.loss_weekly_cents == 250
    assert raised.pending == (limits.Pending("loss", 300, T0 + RAISE),)

    def records(connection: Connection) -> list[tuple[str, dict[str, object]]]:
        return [
            (kind, json.loads(payload))
            for kind, payload in connection.execute(
                select(AuditRecord.kind, AuditRecord.payload).order_by(AuditRecord.seq)
            )
            if kind in ("deposit_limits", "loss_limit")
        ]

    def daily(cents: int) -> dict[str, object]:
        return {
            "player_id": ana,
            "daily_cents": cents,
            "limits_after": {"daily": [cents, None, None]},
        }

    def loss(cents: int, after: list[object]) -> dict[str, object]:
        return {"player_id": ana, "loss_weekly_cents": cents, "limits_after": {"loss": after}}

    assert db.read(records) == [
        ("deposit_limits", daily(100)),
        ("loss_limit", loss(250, [250, None, None])),
        ("deposit_limits", daily(50)),
        ("deposit_limits", daily(50)),
        ("loss_limit", loss(300, [250, 300, (T0 + RAISE).isoformat()])),
    ]


def _records(db: Transactions, player_id: int) -> list[tuple[str, dict[str, object]]]:
    """The limits' audit records of ``player_id`` (kind, payload), oldest first."""
    rows = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.kind, AuditRecord.payload)
            .where(AuditRecord.kind.in_(("deposit_limits", "loss_limit", "stake_limits")))
            .order_by(AuditRecord.seq)
        ).all()
    )
    found = [(kind, json.loads(payload)) for kind, payload in rows]
    return [(kind, payload) for kind, payload in found if payload["player_id"] == player_id]


def test_a_limit_left_out_keeps_its_raise_waiting(engine: Engine, db: Transactions) -> None:
    """Issue 37: the weekly deposit limit raised from 100 EUR to 200 EUR, then the weekly stake
    limit lowered: the raise still waits, and comes into force after its 48 hours."""
    ana = _player(engine)
    _set(db, ana, T0, weekly=10_000, stake_weekly=5_000)
    raised = _set(db, ana, T0 + timedelta(hours=1), weekly=20_000)
    waiting = limits.Pending("weekly", 20_000, T0 + timedelta(hours=1) + RAISE)
    assert (raised.weekly_cents, raised.pending) == (10_000, (waiting,))
    lowered = _set(db, ana, T0 + timedelta(hours=2), stake_weekly=2_000)
    assert (lowered.weekly_cents, lowered.stake_weekly_cents) == (10_000, 2_000)
    assert lowered.pending == (waiting,)
    # Nothing given: nothing changes, and nothing is recorded.
    before = len(_records(db, ana))
    assert _set(db, ana, T0 + timedelta(hours=3)) == lowered
    assert len(_records(db, ana)) == before
    assert _get(db, ana, waiting.effective_at).weekly_cents == 20_000
    # Lowering that same limit is what ends a raise: at once, the raise forgotten.
    _set(db, ana, T0 + timedelta(hours=4), weekly=30_000)
    again = _set(db, ana, T0 + timedelta(hours=5), weekly=9_000)
    assert (again.weekly_cents, again.pending) == (9_000, ())


def test_the_audit_records_say_the_limits_in_force_after(engine: Engine, db: Transactions) -> None:
    """Each record of a change names, for each period given, its row as it then stands:
    ``[amount_cents, pending_cents, pending_effective_at]``; a period left out is absent, and
    a kind of which none was given has no record."""
    ana = _player(engine)
    _set(db, ana, T0, daily=1_000, weekly=10_000, stake_weekly=5_000)
    later = T0 + timedelta(hours=1)
    # A raise (daily), a lowering (weekly); monthly, the stakes and the loss left out.
    _set(db, ana, later, daily=2_000, weekly=8_000)
    # The same raise asked again: its row as it stands, the delay not started anew; a loss
    # limit removed where there was none.
    _set(db, ana, later + timedelta(hours=5), daily=2_000, stake_daily=300, loss=None)
    raise_at = (later + RAISE).isoformat()
    assert _records(db, ana) == [
        (
            "deposit_limits",
            {
                "player_id": ana,
                "daily_cents": 1_000,
                "weekly_cents": 10_000,
                "limits_after": {"daily": [1_000, None, None], "weekly": [10_000, None, None]},
            },
        ),
        (
            "stake_limits",
            {
                "player_id": ana,
                "stake_weekly_cents": 5_000,
                "limits_after": {"stake_weekly": [5_000, None, None]},
            },
        ),
        (
            "deposit_limits",
            {
                "player_id": ana,
                "daily_cents": 2_000,
                "weekly_cents": 8_000,
                "limits_after": {"daily": [1_000, 2_000, raise_at], "weekly": [8_000, None, None]},
            },
        ),
        (
            "deposit_limits",
            {
                "player_id": ana,
                "daily_cents": 2_000,
                "limits_after": {"daily": [1_000, 2_000, raise_at]},
            },
        ),
        (
            "loss_limit",
            {"player_id": ana, "loss_weekly_cents": None, "limits_after": {"loss": [None] * 3}},
        ),
        (
            "stake_limits",
            {
                "player_id": ana,
                "stake_daily_cents": 300,
                "limits_after": {"stake_daily": [300, None, None]},
            },
        ),
    ]


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_change_of_limits_waits_for_the_player_s_account(
    engine: Engine, db: Transactions
) -> None:
    """set_limits locks the player's account row before the limits, as a sale or a deposit
    does: a change asked while one of them holds it is made once that one has committed."""
    ana = _player(engine)
    with ThreadPoolExecutor(1) as pool:
        with engine.begin() as holder:
            holder.execute(select(Account.id).where(Account.player_id == ana).with_for_update())
            change = pool.submit(_set, db, ana, T0, weekly=5_000)
            time.sleep(0.5)
            assert not change.done()
        assert change.result(timeout=10).weekly_cents == 5_000


@pytest.mark.parametrize(("period", "span"), list(limits.PERIODS.items()))
def test_a_deposit_limit_counts_the_deposits_of_its_window(
    engine: Engine, db: Transactions, period: str, span: timedelta
) -> None:
    ana = _player(engine)
    # The moderators too, without which no deposit is taken.
    _set(db, ana, T0 - timedelta(days=40), weekly=MODERATOR, stake_weekly=MODERATOR)
    _set(db, ana, T0 - timedelta(days=40), **{period: 1_000})
    assert _deposit(db, ana, 600, T0) == 600
    with pytest.raises(DepositLimitReachedError) as refused:
        _deposit(db, ana, 401, T0 + span - timedelta(seconds=1))
    assert refused.value.detail.startswith(f"{period} deposit limit 1000 cents: 600 deposited")
    assert _deposit(db, ana, 400, T0 + timedelta(seconds=1)) == 1_000  # the limit exactly
    # The window has moved past the first deposit: 600 more fit beside the 400.
    assert _deposit(db, ana, 600, T0 + span) == 1_600


def test_a_raised_deposit_limit_waits_its_48_hours(engine: Engine, db: Transactions) -> None:
    ana = _player(engine)
    _set(db, ana, T0, daily=500, weekly=MODERATOR, stake_weekly=MODERATOR)
    _set(db, ana, T0 + timedelta(hours=1), daily=2_000, weekly=MODERATOR)
    with pytest.raises(DepositLimitReachedError):
        _deposit(db, ana, 501, T0 + timedelta(hours=48, minutes=59))
    assert _deposit(db, ana, 2_000, T0 + timedelta(hours=49)) == 2_000


def _sell_one(engine: Engine, player_id: int, mode: Mode, key: str) -> Outcome:
    """A purchase of 1 € at T0, alone in its transaction."""
    [outcome] = buy(make_sessionmaker(engine), [Order(player_id, 100, mode, key)], T0)
    return outcome


def _sold(outcomes: list[Outcome]) -> list[bool]:
    return [isinstance(o, plays.PlayView) for o in outcomes]


def _lots(outcomes: list[Outcome]) -> int:
    """What the plays of ``outcomes`` credited to their buyer (an ``auto`` play's lot)."""
    return sum(o.prize_cents or 0 for o in outcomes if isinstance(o, plays.PlayView))


def _balance(db: Transactions, player_id: int) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(Account.balance_cents).where(Account.player_id == player_id)
            ).scalar_one()
        )
    )


@pytest.mark.parametrize("period", list(limits.STAKE_PERIODS))
def test_stakes_that_reach_a_stake_limit_exactly_are_sold_a_cent_past_it_not(
    engine: Engine, db: Transactions, load: BlockLoader, period: str
) -> None:
    """With a stake limit of 3 €, three stakes of 1 € reach it exactly and are sold, the fourth
    is refused; with 2.99 €, the third is refused: the stakes may touch the limit, not pass it.
    A refused stake is not debited."""
    load(100, size=50)
    sessions = make_sessionmaker(engine)
    at, under = funded_player(sessions, "at", 10_000), funded_player(sessions, "under", 10_000)
    _set(db, at, T0 - DAY, **{period: 300})
    _set(db, under, T0 - DAY, **{period: 299})
    reached = [_sell_one(engine, at, Mode.AUTO, f"at{n}") for n in range(4)]
    assert _sold(reached) == [True, True, True, False], reached
    passed = [_sell_one(engine, under, Mode.AUTO, f"under{n}") for n in range(3)]
    assert _sold(passed) == [True, True, False], passed
    span = {"stake_daily": "24 hours", "stake_weekly": "7 days", "stake_monthly": "30 days"}
    for refused, limit, staked in ((reached[3], 300, 300), (passed[2], 299, 200)):
        assert isinstance(refused, StakeLimitReachedError), refused
        assert refused.code == "stake_limit"
        assert refused.detail == (
            f"stake limit {limit} cents per {span[period]}: {staked} cents staked in the "
            "period, a stake of 100 more would pass it"
        )
    assert _balance(db, at) == 10_000 - 300 + _lots(reached)
    assert _balance(db, under) == 10_000 - 200 + _lots(passed)


def test_a_net_loss_that_reaches_the_loss_limit_exactly_is_sold_a_cent_past_it_not(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    """« Jouer » plays, whose lots wait for the fourth grid, so the week's net loss is their
    stakes: with a loss limit of 3 €, three plays of 1 € reach it exactly and are sold, the
    fourth is refused; with 2.99 €, the third is refused. A refused stake is not debited."""
    load(100, size=50)
    sessions = make_sessionmaker(engine)
    at, under = funded_player(sessions, "at", 10_000), funded_player(sessions, "under", 10_000)
    _set(db, at, T0 - DAY, loss=300)
    _set(db, under, T0 - DAY, loss=299)
    reached = [_sell_one(engine, at, Mode.JOUER, f"at{n}") for n in range(4)]
    assert _sold(reached) == [True, True, True, False], reached
    passed = [_sell_one(engine, under, Mode.JOUER, f"under{n}") for n in range(3)]
    assert _sold(passed) == [True, True, False], passed
    for refused, limit, loss in ((reached[3], 300, 300), (passed[2], 299, 200)):
        assert isinstance(refused, LossLimitReachedError), refused
        assert refused.code == "loss_limit"
        assert refused.detail == (
            f"weekly loss limit {limit} cents: a net loss of {loss} cents over the last 7 days, "
            "a stake of 100 more would pass it"
        )
    assert (_balance(db, at), _balance(db, under)) == (10_000 - 300, 10_000 - 200)


def test_a_self_exclusion_is_never_shortened(engine: Engine, db: Transactions) -> None:
    ana = _player(engine)
    for days in (0, -1, limits.MAX_EXCLUSION_DAYS + 1):
        with pytest.raises(InvalidError):
            db.write(limits.self_exclude, player_id=ana, days=days, now=T0)
    week = db.write(limits.self_exclude, player_id=ana, days=7, now=T0)
    assert week == T0 + timedelta(days=7)
    assert db.write(limits.self_exclude, player_id=ana, days=1, now=T0 + DAY) == week
    month = db.write(limits.self_exclude, player_id=ana, days=30, now=T0 + DAY)
    assert month == T0 + timedelta(days=31)
    assert limits.still_excluded(month, month - timedelta(seconds=1)) == month
    assert limits.still_excluded(month, month) is None
    assert limits.still_excluded(None, T0) is None
    with pytest.raises(SelfExcludedError):
        limits.check_not_excluded(month, T0, kind=limits.SELF_EXCLUSION)
    limits.check_not_excluded(month, month, kind=limits.SELF_EXCLUSION)
    limits.check_not_excluded(None, T0, kind=None)


def test_a_pause_is_called_by_its_name_the_one_that_ends_last(
    engine: Engine, db: Transactions
) -> None:
    """A cool-off is a cool-off and a self-exclusion a self-exclusion, in every refusal (the
    sale's and the deposit's) with its end; of two pauses, the one that ends last names it."""
    ana = funded_player(make_sessionmaker(engine), "ana", 1_000)  # moderators set
    two_days = db.write(protection.cool_off, player_id=ana, hours=48, now=T0)
    refusals = _refusals(engine, db, ana, T0 + DAY)
    assert [r.fields for r in refusals] == [
        {"pause": "cool_off", "until": two_days.isoformat()}
    ] * 2
    assert all(r.detail.startswith("on a cool-off until ") for r in refusals)
    # A self-exclusion ending later renames it; a cool-off ending sooner changes nothing.
    month = db.write(limits.self_exclude, player_id=ana, days=30, now=T0 + DAY)
    db.write(protection.cool_off, player_id=ana, hours=24, now=T0 + DAY)
    refusals = _refusals(engine, db, ana, T0 + 2 * DAY)
    assert [r.fields for r in refusals] == [
        {"pause": "self_exclusion", "until": month.isoformat()}
    ] * 2
    assert all(r.detail.startswith("self-excluded until ") for r in refusals)
    # A cool-off ending after it takes the name back.
    later = db.write(protection.cool_off, player_id=ana, hours=168, now=month - DAY)
    assert later > month
    [sale, _] = _refusals(engine, db, ana, month)
    assert sale.fields == {"pause": "cool_off", "until": later.isoformat()}


def _refusals(
    engine: Engine, db: Transactions, player_id: int, now: datetime
) -> list[SelfExcludedError]:
    """Why a purchase and a deposit of ``player_id`` are refused at ``now``."""
    with make_sessionmaker(engine)() as session:
        [sold] = sales.sell(
            session=session, requests=[Order(player_id, 100, Mode.AUTO, f"k{now}")], now=now
        )
        session.rollback()
    with pytest.raises(SelfExcludedError) as deposit:
        _deposit(db, player_id, 100, now)
    assert isinstance(sold, SelfExcludedError), sold
    return [sold, deposit.value]


def test_the_loss_refusal_s_arithmetic() -> None:
    row = ("loss", 500, None, None)
    assert limits.loss_refusal(None, 10_000, 300, T0) is None  # no limit
    assert limits.loss_refusal(("loss", None, None, None), 10_000, 300, T0) is None
    assert limits.loss_refusal(row, 200, 300, T0) is None  # to the limit exactly
    assert limits.loss_refusal(row, -1_000, 300, T0) is None  # a week of winnings
    refused = limits.loss_refusal(row, 201, 300, T0)
    assert isinstance(refused, LossLimitReachedError)
    assert "a net loss of 201 cents" in refused.detail
    # A raise to 1,000 waiting until T0 + 1 h: the 500 holds until then.
    waiting = ("loss", 500, 1_000, T0 + timedelta(hours=1))
    assert isinstance(limits.loss_refusal(waiting, 201, 300, T0), LossLimitReachedError)
    assert limits.loss_refusal(waiting, 201, 300, T0 + timedelta(hours=1)) is None
    assert limits.loss_window_start(T0) == T0 - timedelta(days=7)


def test_the_net_loss_counts_stakes_less_the_lots_credited_within_7_days(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    block = load(100, size=50)
    lots = db.read(
        lambda connection: dict(
            connection.execute(
                select(UnitRow.serial, UnitRow.lot_cents).where(UnitRow.block_id == block)
            ).all()
        )
    )
    winner = min(serial for serial, lot in lots.items() if serial > 2 and lot > 0)
    factory = make_sessionmaker(engine)
    ana, bob = funded_player(factory, "ana", 5_000), funded_player(factory, "bob", 5_000)
    week = T0 - timedelta(days=6)

    def sell(order: Order, when: datetime) -> plays.PlayView:
        [play] = buy(factory, [order], when)
        assert isinstance(play, plays.PlayView), play
        return play

    # Units are sold in serial order: 1 a week ago exactly, 2, bob's up to a winning unit,
    # then ana's jouer play of that unit.
    sell(Order(ana, 100, Mode.JOUER, "old"), T0 - timedelta(days=7))
    auto = sell(Order(ana, 100, Mode.AUTO, "auto"), week)
    for n in range(winner - 3):
        sell(Order(bob, 100, Mode.AUTO, f"bob{n}"), week)
    jouer = sell(Order(ana, 100, Mode.JOUER, "jouer"), week)
    assert jouer.serial == winner
    assert auto.prize_cents == lots[2]

    def loss(player_id: int) -> int:
        return db.read(
            lambda connection: int(
                connection.execute(
                    select(limits.net_loss(literal(player_id))),
                    {"since": limits.loss_window_start(T0)},
                ).scalar_one()
            )
        )

    # The play of exactly 7 days ago is out; the jouer play's lot is not credited yet.
    assert loss(ana) == 200 - lots[2]
    assert loss(bob) == sum(100 - lots[s] for s in range(3, winner))
    db.write(plays.reveal, requests=[plays.Reveal(ana, jouer.play_id, 4)], now=T0)
    assert loss(ana) == 200 - lots[2]  # one grid of four: still not credited
    db.write(
        plays.reveal,
        requests=[plays.Reveal(ana, jouer.play_id, g) for g in (1, 2, 3)],
        now=T0,
    )
    assert loss(ana) == 200 - lots[2] - lots[winner]
