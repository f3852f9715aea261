"""The audit of the player's limits (service/limits_audit.py), on both databases: clean after
purchases and deposits within the limits, across a window's edge and a raise that waited; and
failing, naming the player and the window, where a stake, a loss or a deposit passed a limit
in force at its time (planted: the limit's row changed behind the audit log's back, so the
sale or the deposit let it through) or came before the moderators."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.service import limits, wallet
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import DepositLimit
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player

Sessions = sessionmaker[Session]


@pytest.fixture
def sessions(engine: Engine, load: BlockLoader) -> Sessions:
    load(100, size=60)
    load(300, size=60)
    return make_sessionmaker(engine)


def _limits_check(engine: Engine) -> tuple[bool, str]:
    """Whether the audit's limits check passed, and what it found."""
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
    [check] = [c for c in report.checks if c.code == "limits_kept"]
    return check.passed, check.detail


def _set(sessions: Sessions, player_id: int, now: datetime, **changes: int | None) -> None:
    with sessions() as session, session.begin():
        limits.set_limits(session=session, player_id=player_id, changes=changes, now=now)


def _buy(
    sessions: Sessions, player_id: int, stake: int, now: datetime, mode: Mode = Mode.AUTO
) -> PlayView:
    [sold] = buy(sessions, [Order(player_id, stake, mode, f"k{now.timestamp()}-{stake}")], now)
    assert isinstance(sold, PlayView), sold
    return sold


def _behind_the_logs_back(engine: Engine, player_id: int, period: str, cents: int | None) -> None:
    """A limit's row changed with no audit record: what the sale then reads is not what the
    log says was in force."""
    with engine.begin() as conn:
        conn.execute(
            update(DepositLimit)
            .where(DepositLimit.player_id == player_id, DepositLimit.period == period)
            .values(amount_cents=cents, pending_cents=None, pending_effective_at=None)
        )


def test_clean_across_a_window_edge_and_a_raise_that_waited(
    engine: Engine, sessions: Sessions
) -> None:
    player = funded_player(sessions, "ana", 10_000)
    start = utcnow() - timedelta(days=3)
    _set(sessions, player, start, stake_daily=300)
    for minutes in (0, 1, 2):  # the limit reached
        _buy(sessions, player, 100, start + timedelta(minutes=minutes))
    # A day and a second after the first: it is out of the window, one more fits.
    _buy(sessions, player, 100, start + timedelta(days=1, hours=1, seconds=1))
    _set(sessions, player, start + timedelta(days=1, hours=2), stake_daily=600)  # waits 48 h
    later = start + timedelta(days=3, hours=3)  # the raise in force, the window empty
    for minutes in range(6):
        _buy(sessions, player, 100, later + timedelta(seconds=minutes))
    passed, found = _limits_check(engine)
    assert passed, found
    assert found.startswith("10 purchases and 1 deposits of 1 players within the limits")


def test_a_stake_limit_passed_is_named(engine: Engine, sessions: Sessions) -> None:
    player = funded_player(sessions, "ana", 10_000)
    now = utcnow()
    _set(sessions, player, now, stake_daily=200)
    _buy(sessions, player, 100, now)
    _buy(sessions, player, 100, now + timedelta(seconds=1))
    assert _limits_check(engine)[0]
    _behind_the_logs_back(engine, player, "stake_daily", 10**6)
    _buy(sessions, player, 100, now + timedelta(seconds=2))
    passed, found = _limits_check(engine)
    assert not passed
    assert f"player {player} at record" in found
    assert "stake_daily limit 200 cents passed: 200 cents staked in the 24 hours before" in found
    with make_sessionmaker(engine)() as session:
        assert any(
            f.startswith("limits kept: ")
            for f in run_audit(connection=session.connection()).failures
        )


def test_a_loss_limit_passed_is_named(engine: Engine, sessions: Sessions) -> None:
    player = funded_player(sessions, "ana", 10_000)
    now = utcnow()
    _set(sessions, player, now, loss=300)
    _behind_the_logs_back(engine, player, "loss", None)
    # Jouer plays: their lots wait for the fourth grid, so the loss is their stakes.
    _buy(sessions, player, 300, now, Mode.JOUER)
    assert _limits_check(engine)[0]
    _buy(sessions, player, 300, now + timedelta(seconds=1), Mode.JOUER)
    passed, found = _limits_check(engine)
    assert not passed
    assert f"player {player} at record" in found
    assert (
        "weekly loss limit 300 cents passed: a net loss of 300 cents in the 7 days before, "
        "then a stake of 300" in found
    )


def test_a_deposit_limit_passed_is_named(engine: Engine, sessions: Sessions) -> None:
    player = funded_player(sessions, "ana", 0)
    now = utcnow()
    _set(sessions, player, now, daily=500)
    _behind_the_logs_back(engine, player, "daily", None)
    for n, cents in enumerate((400, 300)):
        with sessions() as session, session.begin():
            wallet.deposit(
                session=session,
                player_id=player,
                amount_cents=cents,
                idempotency_key=f"d{n}",
                now=now + timedelta(seconds=n),
            )
    passed, found = _limits_check(engine)
    assert not passed
    assert f"player {player} at record" in found
    assert (
        "daily deposit limit 500 cents passed: 400 cents deposited in the 24 hours "
        "before, then 300 more" in found
    )


def test_a_deposit_and_a_stake_before_the_moderators_are_named(
    engine: Engine, sessions: Sessions
) -> None:
    player = funded_player(sessions, "ana", 0, moderators=False)
    with sessions() as session, session.begin():
        for period in limits.MODERATORS:  # rows with no record: the log has no moderators
            session.add(DepositLimit(player_id=player, period=period, amount_cents=10**9))
    assert _limits_check(engine)[0]
    with sessions() as session, session.begin():
        wallet.deposit(
            session=session, player_id=player, amount_cents=500, idempotency_key="d", now=utcnow()
        )
    _buy(sessions, player, 100, utcnow())
    passed, found = _limits_check(engine)
    assert not passed
    assert f"player {player} at record" in found
    assert "a deposit of 500 cents before the moderators were set" in found
    assert "a stake of 100 cents before the moderators were set" in found
