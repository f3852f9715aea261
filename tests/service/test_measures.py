"""An operator's measures on a player's account (service/measures.py), on both databases: a
suspension stops purchases and deposits until lifted, an exclusion until its end; a closure
ends the sessions and the log-ins; a note only says something. Each is a note the player
reads and an audit record under the operator's name; a closed account takes no measure but a
note, and a suspension is lifted once."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from pharaon.game.modes import Mode
from pharaon.service import measures, operators, passwords, player_view, sealing, standing
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    AccountClosedError,
    ConflictError,
    InvalidError,
    NotFoundError,
    SuspendedError,
)
from pharaon.service.orders import Order
from pharaon.service.wallet import deposit
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, SessionRow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import PASSWORD, buy, funded_player, log_in
from tests.service.test_accounts import THROTTLE

SEALER = sealing.Sealer(bytes(range(32)), Path("test-totp.key"))


def _operator(db: Transactions) -> int:
    return db.write(
        operators.add,
        sealer=SEALER,
        email="admin@example.org",
        password_hash=passwords.hash_password("a long admin password"),
        role="admin",
        actor="test",
        now=utcnow(),
    ).operator_id


def _take(db: Transactions, operator_id: int, player_id: int, measure: str, **kw: object) -> object:
    return db.write(
        measures.take,
        player_id=player_id,
        operator_id=operator_id,
        actor="operator:admin@example.org",
        measure=measure,
        reason=kw.pop("reason", f"why {measure}"),
        now=kw.pop("now", utcnow()),
        **kw,
    )


def _deposit(db: Transactions, player_id: int, key: str) -> object:
    return db.write(
        deposit, player_id=player_id, amount_cents=100, idempotency_key=key, now=utcnow()
    )


def _records(db: Transactions) -> list[tuple[str, str, dict[str, object]]]:
    rows = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.kind, AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.kind.like("player_%"))
            .order_by(AuditRecord.seq)
        ).all()
    )
    return [(kind, actor, json.loads(payload)) for kind, actor, payload in rows]


def test_a_suspension_stops_purchases_and_deposits_until_lifted(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    bob = funded_player(factory, "bob", 1_000)
    admin = _operator(db)
    _take(db, admin, ana, "suspend", reason="checks on the account")
    # Refused first, before the balance or a limit; bob in the same batch is sold.
    refused, sold = buy(
        factory, [Order(ana, 100, Mode.AUTO, "a1"), Order(bob, 100, Mode.AUTO, "b1")]
    )
    assert isinstance(refused, SuspendedError)
    assert not isinstance(sold, Exception)
    with pytest.raises(SuspendedError):
        _deposit(db, ana, "d1")
    found = db.read(standing.look_up, player_id=ana, now=utcnow())
    assert (found.suspended, found.suspended_until, found.balance_cents) == (True, None, 1_000)
    _take(db, admin, ana, "lift", reason="checks done")
    with pytest.raises(ConflictError):  # once
        _take(db, admin, ana, "lift")
    [again] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")])  # the refused key is free
    assert not isinstance(again, Exception)
    _deposit(db, ana, "d1")
    assert [(k, a, p["reason"]) for k, a, p in _records(db)] == [
        ("player_suspend", "operator:admin@example.org", "checks on the account"),
        ("player_lift", "operator:admin@example.org", "checks done"),
    ]


def test_an_exclusion_ends_by_itself(engine: Engine, db: Transactions, load: BlockLoader) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    admin = _operator(db)
    now = utcnow()
    with pytest.raises(InvalidError):
        _take(db, admin, ana, "exclude", days=0, now=now)
    with pytest.raises(InvalidError):
        _take(db, admin, ana, "suspend", days=3, now=now)
    with pytest.raises(InvalidError):
        _take(db, admin, ana, "note", reason="  ", now=now)
    note = _take(db, admin, ana, "exclude", days=3, now=now)
    end = now + timedelta(days=3)
    assert isinstance(note, measures.Note)
    assert note.until == end
    [refused] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")], now=now)
    assert isinstance(refused, SuspendedError)
    assert refused.fields == {"until": end.isoformat()}
    assert db.read(standing.look_up, player_id=ana, now=now).suspended_until == end
    [line] = db.read(player_view.search, email="ana", now=now)
    assert (line.suspended, line.suspended_until) == (True, end)
    # At its end it no longer holds, and there is nothing left to lift.
    [sold] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")], now=end)
    assert not isinstance(sold, Exception)
    assert db.read(player_view.search, email="ana", now=end)[0].suspended is False
    with pytest.raises(ConflictError):
        _take(db, admin, ana, "lift", now=end)
    assert [p["until"] for _, _, p in _records(db)] == [end.isoformat()]


def test_a_closure_ends_the_sessions_and_only_a_note_follows(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 500)
    admin = _operator(db)
    log_in(db, "ana@example.org", PASSWORD, client=None, throttle=THROTTLE, now=utcnow())
    _take(db, admin, ana, "close", reason="asked by the player by letter")
    count = select(func.count()).select_from(SessionRow).where(SessionRow.player_id == ana)
    assert db.read(lambda connection: connection.execute(count).scalar()) == 0
    with pytest.raises(AccountClosedError):
        log_in(db, "ana@example.org", PASSWORD, client=None, throttle=THROTTLE, now=utcnow())
    for measure in ("close", "suspend", "lift"):
        with pytest.raises(ConflictError):
            _take(db, admin, ana, measure)
    _take(db, admin, ana, "note", reason="balance paid back by transfer")
    with pytest.raises(NotFoundError):
        _take(db, admin, 999_999, "note")
    # The player's notes, newest first, without the operator; the back office's, with.
    shown = db.read(measures.notes, player_id=ana)
    assert [(n.measure, n.reason, n.operator) for n in shown] == [
        ("note", "balance paid back by transfer", None),
        ("close", "asked by the player by letter", None),
    ]
    file = db.read(player_view.player_file, player_id=ana, now=utcnow())
    assert [n.operator for n in file.notes] == ["admin@example.org"] * 2
    assert file.player.closed_at is not None
    assert file.player.balance_cents == 500  # the balance stays on the ledger


def test_an_unknown_measure_changes_nothing(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    admin = _operator(db)
    with pytest.raises(InvalidError):
        _take(db, admin, ana, "freeze")
    assert db.read(measures.notes, player_id=ana) == []
    assert _records(db) == []
