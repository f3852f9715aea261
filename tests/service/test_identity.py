"""A player's identity (service/identity.py), on both databases: an account opens provisional;
an admin verifies it with what the document says and an IBAN checked by its ISO 13616 digits;
an account left provisional past its deadline is suspended for play by the server, and the
check lifts that suspension (not an operator's); each step is an audit record."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select, update

from pharaon.game.modes import Mode
from pharaon.service import identity, standing, traces
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    ConflictError,
    InvalidError,
    NotFoundError,
    SuspendedError,
)
from pharaon.service.orders import Order
from pharaon.service.wallet import deposit
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, IdentityCheck, Player
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player
from tests.service.test_measures import _operator, _take

# A French IBAN with valid check digits (the banks' own example), and others of the registry.
FR_IBAN = "FR76 3000 6000 0112 3456 7890 189"
SEEN = traces.Seen("0123456789abcdef", "203.0.113.7")


def document(**changes: object) -> identity.Document:
    values: dict[str, object] = {
        "kind": "id_card",
        "ref": "x1234",
        "last_name": "  Dupont ",
        "first_names": "Anne  Marie",
        "birth_date": date(1980, 1, 1),  # funded_player's
        "iban": FR_IBAN.lower(),
    }
    values.update(changes)
    return identity.Document(**values)  # type: ignore[arg-type]


def verify(db: Transactions, player_id: int, operator_id: int, **changes: object) -> object:
    return db.write(
        identity.verify,
        player_id=player_id,
        operator_id=operator_id,
        actor="operator:admin@example.org",
        document=document(**changes),
        now=utcnow(),
        seen=SEEN,
    )


@pytest.mark.parametrize(
    "iban",
    [
        "FR7630006000011234567890189",
        "fr76 3000 6000 0112 3456 7890 189",
        "DE89370400440532013000",
        "GB82 WEST 1234 5698 7654 32",
        "BE68539007547034",
        "NO9386011117947",
    ],
)
def test_valid_ibans_are_normalised(iban: str) -> None:
    assert identity.normalise_iban(iban) == "".join(iban.split()).upper()


@pytest.mark.parametrize(
    ("iban", "why"),
    [
        ("FR7630006000011234567890188", "check digits"),  # one digit off
        ("FR7730006000011234567890189", "check digits"),
        ("DE8937040044053201300", "has 22 characters, got 21"),
        ("FR76300060000112345678901890", "has 27 characters, got 28"),
        ("ZZ89370400440532013000", "country ZZ"),
        ("FR76-3000-6000", "2 letters of a country"),
        ("76FR30006000011234567890189", "2 letters of a country"),
        ("", "2 letters of a country"),
    ],
)
def test_bad_ibans_are_refused_naming_the_field(iban: str, why: str) -> None:
    with pytest.raises(InvalidError, match=r"^iban") as refused:
        identity.normalise_iban(iban)
    assert why in refused.value.detail


def test_days_left_until_the_deadline() -> None:
    opened = datetime(2026, 1, 1, tzinfo=UTC)
    found = identity.identity_of(
        created_at=opened, verified_at=None, now=opened + timedelta(hours=1), days=30
    )
    assert (found.state, found.deadline, found.days_left) == (
        "provisional",
        opened + timedelta(days=30),
        30,
    )
    late = identity.identity_of(
        created_at=opened, verified_at=None, now=opened + timedelta(days=31), days=30
    )
    assert late.days_left == 0
    done = identity.identity_of(created_at=opened, verified_at=opened, now=opened, days=30)
    assert (done.state, done.deadline, done.days_left) == ("verified", None, None)


def test_an_admin_verifies_once_with_what_was_seen(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    admin = _operator(db)
    assert db.read(standing.look_up, player_id=ana, now=utcnow()).verified_at is None
    checked = verify(db, ana, admin)
    assert checked == identity.Document(
        "id_card", "X1234", "Dupont", "Anne Marie", date(1980, 1, 1), "FR7630006000011234567890189"
    )
    assert db.read(standing.look_up, player_id=ana, now=utcnow()).verified_at is not None
    seen = db.read(identity.check_of, player_id=ana)
    assert seen is not None
    assert (seen.iban, seen.last_name, seen.operator) == (
        "FR7630006000011234567890189",
        "Dupont",
        "admin@example.org",
    )
    with pytest.raises(ConflictError, match="already verified"):
        verify(db, ana, admin, iban="DE89370400440532013000")
    [record] = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.actor, AuditRecord.payload).where(
                AuditRecord.kind == "identity_verified"
            )
        ).all()
    )
    assert record.actor == "operator:admin@example.org"
    assert json.loads(record.payload) == {
        "player_id": ana,
        "session_id": "0123456789abcdef",
        "address": "203.0.113.7",
        "document_kind": "id_card",
        "document_ref": "X1234",
        "last_name": "Dupont",
        "first_names": "Anne Marie",
        "birth_date": "1980-01-01",
        "iban": "FR7630006000011234567890189",
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"iban": "FR7630006000011234567890188"}, "iban"),
        ({"birth_date": date(1981, 1, 1)}, "birth_date"),
        ({"kind": "driving_licence"}, "document_kind"),
        ({"ref": "#"}, "document_ref"),
        ({"ref": "1" * 41}, "document_ref"),
        ({"last_name": "   "}, "last_name"),
        ({"first_names": "x" * 201}, "first_names"),
        ({"last_name": "Du\x07pont"}, "last_name"),
    ],
)
def test_a_wrong_document_changes_nothing(
    engine: Engine, db: Transactions, changes: dict[str, object], field: str
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    admin = _operator(db)
    with pytest.raises(InvalidError, match=rf"^{field}"):
        verify(db, ana, admin, **changes)
    assert db.read(standing.look_up, player_id=ana, now=utcnow()).verified_at is None
    count = db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(IdentityCheck)
        ).scalar_one()
    )
    assert count == 0


def test_no_such_player_and_a_closed_account(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    admin = _operator(db)
    with pytest.raises(NotFoundError):
        verify(db, 999_999, admin)
    _take(db, admin, ana, "close")
    with pytest.raises(ConflictError, match="closed"):
        verify(db, ana, admin)


def _open_since(engine: Engine, player_id: int, days: float) -> None:
    with engine.begin() as connection:
        connection.execute(
            update(Player)
            .where(Player.id == player_id)
            .values(created_at=utcnow() - timedelta(days=days))
        )


def test_a_provisional_account_past_its_deadline_is_suspended_until_verified(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    bob = funded_player(factory, "bob", 1_000)  # opened 29 days ago: not yet
    cid = funded_player(factory, "cid", 1_000)  # suspended by an operator meanwhile
    admin = _operator(db)
    _open_since(engine, ana, 31)
    _open_since(engine, bob, 29)
    _open_since(engine, cid, 31)
    _take(db, admin, cid, "suspend", reason="payment under review")
    after = timedelta(days=30)
    assert db.write(identity.suspend_overdue, now=utcnow(), after=after) == 1
    assert db.write(identity.suspend_overdue, now=utcnow(), after=after) == 0  # once
    [refused] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")])
    assert isinstance(refused, SuspendedError)
    with pytest.raises(SuspendedError):
        db.write(deposit, player_id=ana, amount_cents=100, idempotency_key="d", now=utcnow())
    assert db.read(standing.look_up, player_id=ana, now=utcnow()).suspended
    [sold] = buy(factory, [Order(bob, 100, Mode.AUTO, "b1")])
    assert not isinstance(sold, Exception)

    verify(db, ana, admin)
    verify(db, cid, admin)
    assert not db.read(standing.look_up, player_id=ana, now=utcnow()).suspended
    # An operator's suspension is the operator's to lift.
    assert db.read(standing.look_up, player_id=cid, now=utcnow()).suspended
    [again] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")])
    assert not isinstance(again, Exception)
    assert db.write(identity.suspend_overdue, now=utcnow(), after=after) == 0
    kinds = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.kind, AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.kind == "identity_suspended")
            .order_by(AuditRecord.seq)
        ).all()
    )
    assert [(k, a, json.loads(p)["player_id"]) for k, a, p in kinds] == [
        ("identity_suspended", "server", ana)
    ]


def test_a_lifted_identity_suspension_comes_back(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    admin = _operator(db)
    _open_since(engine, ana, 40)
    assert db.write(identity.suspend_overdue, now=utcnow(), after=timedelta(days=30)) == 1
    _take(db, admin, ana, "lift", reason="by mistake")
    assert not db.read(standing.look_up, player_id=ana, now=utcnow()).suspended
    assert db.write(identity.suspend_overdue, now=utcnow(), after=timedelta(days=30)) == 1
    found = db.read(standing.look_up, player_id=ana, now=utcnow())
    assert (found.suspended, found.suspended_until) == (True, None)
