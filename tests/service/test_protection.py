"""The player's protection (service/protection.py), on both databases: a cool-off that is never
shortened, the password changed or the account closed only from the hash the caller checked,
the reality check's interval, and the figures of a log-in session."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Connection, Engine, Row, select

from pharaon.game.modes import Mode
from pharaon.service import accounts, logins, plays, protection, sessions, wallet
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    AccountClosedError,
    ConflictError,
    InvalidError,
    SelfExcludedError,
    UnauthorizedError,
)
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, Player, UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player, password_hash

NEW_HASH = "$argon2id$v=19$m=19456,t=2,p=1$bmV3$bmV3"  # stored as given: never checked here


def _player(engine: Engine, deposit_cents: int = 0) -> int:
    return funded_player(make_sessionmaker(engine), "ana", deposit_cents)


def _audit(db: Transactions, kind: str) -> list[dict[str, object]]:
    return db.read(
        lambda connection: [
            json.loads(p)
            for p in connection.execute(
                select(AuditRecord.payload)
                .where(AuditRecord.kind == kind)
                .order_by(AuditRecord.seq)
            ).scalars()
        ]
    )


PlayerRow = Row[datetime | None, datetime | None, int | None]


def _player_row(db: Transactions, player_id: int) -> PlayerRow:
    def read(connection: Connection) -> PlayerRow:
        return connection.execute(
            select(
                Player.self_excluded_until, Player.closed_at, Player.reality_check_minutes
            ).where(Player.id == player_id)
        ).one()

    return db.read(read)


def test_a_cool_off_lasts_a_day_to_a_week_and_is_never_shortened(
    engine: Engine, db: Transactions
) -> None:
    ana = _player(engine)
    now = utcnow()
    for hours in (23, 169, 0, -24):
        with pytest.raises(InvalidError):
            db.write(protection.cool_off, player_id=ana, hours=hours, now=now)
    week = db.write(protection.cool_off, player_id=ana, hours=168, now=now)
    assert week == now + timedelta(hours=168)
    # A shorter one later keeps the week; a deposit waits until it ends.
    later = now + timedelta(hours=1)
    assert db.write(protection.cool_off, player_id=ana, hours=24, now=later) == week
    assert _player_row(db, ana).self_excluded_until == week
    for wait in (timedelta(hours=25), timedelta(hours=167, minutes=59)):
        with pytest.raises(SelfExcludedError):
            db.write(
                wallet.deposit,
                player_id=ana,
                amount_cents=100,
                idempotency_key="k",
                now=now + wait,
            )
    late = db.write(
        wallet.deposit,
        player_id=ana,
        amount_cents=100,
        idempotency_key="k",
        now=now + timedelta(hours=168),
    )
    assert late.balance_cents == 100
    assert [p["hours"] for p in _audit(db, "cool_off")] == [168, 24]
    assert {p["until"] for p in _audit(db, "cool_off")} == {week.isoformat()}


def test_a_password_change_ends_the_other_sessions(engine: Engine, db: Transactions) -> None:
    ana = _player(engine)
    now = utcnow()
    kept, *others = (
        db.write(lambda session: sessions.create(session, player_id=ana, now=now)) for _ in range(3)
    )
    checked = db.read(accounts.password_hash, player_id=ana)
    assert checked == password_hash()
    db.write(
        protection.change_password,
        player_id=ana,
        checked_hash=checked,
        new_hash=NEW_HASH,
        keep_session_sha256=sessions.token_digest(kept.token),
        now=now,
    )
    assert db.read(accounts.password_hash, player_id=ana) == NEW_HASH
    found = db.read(sessions.look_up, requests=[kept.token, *(o.token for o in others)], now=now)
    assert isinstance(found[0], sessions.Found)
    assert all(isinstance(f, UnauthorizedError) for f in found[1:])
    assert _audit(db, "password_changed") == [{"player_id": ana}]


def test_of_two_changes_from_one_password_the_second_is_refused(
    engine: Engine, db: Transactions
) -> None:
    """Both checked the current password against the same hash; the first changed it."""
    ana = _player(engine)
    now = utcnow()
    checked = db.read(accounts.password_hash, player_id=ana)
    kept = db.write(lambda session: sessions.create(session, player_id=ana, now=now))

    def change(new_hash: str) -> None:
        db.write(
            protection.change_password,
            player_id=ana,
            checked_hash=checked,
            new_hash=new_hash,
            keep_session_sha256=sessions.token_digest(kept.token),
            now=now,
        )

    change(NEW_HASH)
    with pytest.raises(ConflictError):
        change(NEW_HASH + "x")
    assert db.read(accounts.password_hash, player_id=ana) == NEW_HASH
    assert len(_audit(db, "password_changed")) == 1


def test_a_closed_account_logs_in_no_more_and_keeps_its_balance(
    engine: Engine, db: Transactions
) -> None:
    ana = _player(engine, 1_234)
    now = utcnow()
    tokens = [
        db.write(lambda session: sessions.create(session, player_id=ana, now=now)).token
        for _ in range(2)
    ]
    with pytest.raises(ConflictError):  # a hash that is not the account's
        db.write(protection.close_account, player_id=ana, checked_hash=NEW_HASH, now=now)
    assert _player_row(db, ana).closed_at is None
    checked = db.read(accounts.password_hash, player_id=ana)
    db.write(protection.close_account, player_id=ana, checked_hash=checked, now=now)
    assert _player_row(db, ana).closed_at == now
    found = db.read(sessions.look_up, requests=tokens, now=now)
    assert all(isinstance(f, UnauthorizedError) for f in found)
    attempt = db.write(
        accounts.begin_log_in,
        email="ana@example.org",
        client=None,
        throttle=logins.Throttle(),
        now=now,
    )
    assert isinstance(attempt, accounts.Attempt)
    assert attempt.closed_at == now  # the right password is then told so, and no session opens
    with pytest.raises(AccountClosedError):
        db.write(accounts.finish_log_in, attempt=attempt, now=now)
    assert db.write(wallet.balance, player_id=ana) == 1_234
    # Closed once: neither a second closure nor a password change goes through.
    with pytest.raises(ConflictError):
        db.write(protection.close_account, player_id=ana, checked_hash=checked, now=now)
    with pytest.raises(ConflictError):
        db.write(
            protection.change_password,
            player_id=ana,
            checked_hash=checked,
            new_hash=NEW_HASH,
            keep_session_sha256="",
            now=now,
        )
    assert _audit(db, "account_closed") == [{"player_id": ana}]


def test_the_reality_check_s_interval(engine: Engine, db: Transactions) -> None:
    ana = _player(engine)
    now = utcnow()
    for minutes in (0, 45, 240, -15):
        with pytest.raises(InvalidError):
            db.write(protection.set_reality_check, player_id=ana, minutes=minutes, now=now)
    assert _player_row(db, ana).reality_check_minutes is None
    for chosen in (*protection.REALITY_CHECK_MINUTES, None):
        assert (
            db.write(protection.set_reality_check, player_id=ana, minutes=chosen, now=now) == chosen
        )
        assert _player_row(db, ana).reality_check_minutes == chosen
    assert [p["minutes"] for p in _audit(db, "reality_check")] == [15, 30, 60, 120, None]


def test_a_session_s_figures_count_its_own_plays_and_credited_lots(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=50)
    twos = load(200, size=50)
    lots = db.read(
        lambda connection: dict(
            connection.execute(
                select(UnitRow.serial, UnitRow.lot_cents).where(UnitRow.block_id == twos)
            ).all()
        )
    )
    winner = min(serial for serial, lot in lots.items() if lot > 0)
    opened = utcnow()
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 5_000)
    bob = funded_player(factory, "bob", 100_000)
    # Bob's plays take the units before a winning one at 2 € (sold in serial order).
    buy(factory, [Order(bob, 200, Mode.AUTO, f"b{n}") for n in range(winner - 1)], opened)
    db.write(protection.set_reality_check, player_id=ana, minutes=30, now=opened)
    new = db.write(lambda session: sessions.create(session, player_id=ana, now=opened))
    digest = sessions.token_digest(new.token)

    def figures(seconds: int) -> protection.SessionFigures:
        return db.read(
            protection.session_figures,
            player_id=ana,
            token_sha256=digest,
            now=opened + timedelta(seconds=seconds),
        )

    assert figures(0) == protection.SessionFigures(opened, 0, 0, 0, 30)
    # A play before the session is not its own.
    before = buy(factory, [Order(ana, 100, Mode.AUTO, "before")], opened - timedelta(seconds=1))
    auto, jouer = buy(
        factory,
        [Order(ana, 100, Mode.AUTO, "auto"), Order(ana, 200, Mode.JOUER, "jouer")],
        opened + timedelta(seconds=60),
    )
    assert isinstance(before[0], plays.PlayView)
    assert isinstance(auto, plays.PlayView)
    assert isinstance(jouer, plays.PlayView)
    assert jouer.serial == winner
    assert auto.prize_cents is not None
    now = figures(90)
    assert (now.elapsed_seconds, now.stakes_cents, now.wins_cents) == (90, 300, auto.prize_cents)
    assert now.net_cents == auto.prize_cents - 300
    # The jouer play's lot counts once its fourth grid is uncovered, not before.
    db.write(
        plays.reveal,
        requests=[plays.Reveal(ana, jouer.play_id, g) for g in (1, 2, 3)],
        now=opened + timedelta(seconds=100),
    )
    assert figures(110).wins_cents == auto.prize_cents
    [last] = db.write(
        plays.reveal,
        requests=[plays.Reveal(ana, jouer.play_id, 4)],
        now=opened + timedelta(seconds=120),
    )
    assert isinstance(last, plays.PlayView)
    assert last.prize_cents == lots[winner] > 0
    assert figures(120).wins_cents == auto.prize_cents + lots[winner]
    assert figures(-5).elapsed_seconds == 0


def test_the_figures_of_no_session_of_the_player_are_refused(
    engine: Engine, db: Transactions
) -> None:
    factory = make_sessionmaker(engine)
    ana, bob = funded_player(factory, "ana", 0), funded_player(factory, "bob", 0)
    now = utcnow()
    bobs = db.write(lambda session: sessions.create(session, player_id=bob, now=now))
    for token_sha256 in (sessions.token_digest(bobs.token), "0" * 64):
        with pytest.raises(UnauthorizedError):
            db.read(protection.session_figures, player_id=ana, token_sha256=token_sha256, now=now)
