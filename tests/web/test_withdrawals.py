"""Identity and withdrawals over HTTP, on both databases: ``GET /me`` tells a provisional
account its days left; an admin verifies the identity (``POST /operator/players/{id}/identity``:
an analyst may not, a bad IBAN is 422 naming the field); ``POST /withdrawals`` is refused (403
``identity_unverified``) before, idempotent after, paid at once up to the threshold, else
listed for the admins, who approve or reject it once; the player sees the IBAN masked and the
state; bad bodies are 4xx and change nothing; the audit holds."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    Account,
    AuditRecord,
    IdentityCheck,
    LedgerEntry,
    LedgerTransaction,
    Withdrawal,
)
from tests.conftest import Player
from tests.web.test_measures import _admin

IBAN = "FR76 3000 6000 0112 3456 7890 189"
DOCUMENT = {
    "document_kind": "passport",
    "document_ref": "12AB34567",
    "last_name": "Martin",
    "first_names": "Ana Lucía",
    "birth_date": "1990-05-17",  # the conftest Player's
    "iban": IBAN,
}


def verify(client: TestClient, admin: dict[str, str], player: Player, **changes: Any) -> Any:
    return client.post(
        f"/api/v1/operator/players/{player.player_id}/identity",
        json={**DOCUMENT, **changes},
        headers=admin,
    )


def withdraw(player: Player, amount: Any, key: str | None = None) -> Any:
    return player.post("/withdrawals", {"amount_cents": amount}, key=key or secrets.token_hex(8))


def _count(engine: Engine, table: Any) -> int:
    with make_sessionmaker(engine)() as session:
        return int(session.execute(select(func.count()).select_from(table)).scalar_one())


def test_the_identity_is_provisional_until_an_admin_verifies_it(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    me = player.get("/me").json()
    assert me["identity"]["state"] == "provisional"
    assert me["identity"]["days_left"] == 30
    assert me["identity"]["deadline"] is not None
    player.deposit(5_000)
    refused = withdraw(player, 1_000)
    assert (refused.status_code, refused.json()["error"]) == (403, "identity_unverified")
    assert player.balance() == 5_000

    admin = _admin(client, engine, settings)
    analyst = _admin(client, engine, settings, "analyst")
    assert verify(client, analyst, player).status_code == 403
    for changes, field in (
        ({"iban": "FR76 3000 6000 0112 3456 7890 188"}, "iban"),
        ({"iban": "DE89 3704 0044 0532 0130"}, "iban"),
        ({"iban": "x" * 65}, "iban"),
        ({"iban": 7}, "iban"),
        ({"document_kind": "library_card"}, "document_kind"),
        ({"document_ref": ""}, "document_ref"),
        ({"document_ref": "1" * 41}, "document_ref"),
        ({"last_name": "a\x00b"}, "last_name"),
        ({"first_names": "x" * 201}, "first_names"),
        ({"birth_date": "1991-05-17"}, "birth_date"),
        ({"birth_date": "17/05/1990"}, "birth_date"),
        ({"extra": 1}, "extra"),
    ):
        r = verify(client, admin, player, **changes)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), (changes, r.text)
        assert r.json()["detail"].startswith(field), r.json()
        assert "\n" not in r.json()["detail"]
    assert _count(engine, IdentityCheck) == 0
    missing = client.post("/api/v1/operator/players/999999/identity", json=DOCUMENT, headers=admin)
    assert missing.status_code == 404
    waiting = client.get("/api/v1/operator/identities", headers=analyst).json()
    assert [(p["player_id"], p["identity"]["state"]) for p in waiting] == [
        (player.player_id, "provisional")
    ]

    done = verify(client, admin, player)
    assert done.status_code == 201, done.text
    assert (done.json()["iban"], done.json()["operator"]) == (
        "FR7630006000011234567890189",
        "admin@example.org",
    )
    again = verify(client, admin, player)
    assert (again.status_code, again.json()["error"]) == (409, "conflict")
    me = player.get("/me").json()
    assert (me["identity"]["state"], me["identity"]["days_left"]) == ("verified", None)
    assert client.get("/api/v1/operator/identities", headers=admin).json() == []
    verified = client.get(
        "/api/v1/operator/identities", params={"state": "verified"}, headers=admin
    ).json()
    assert [p["player_id"] for p in verified] == [player.player_id]
    bad_state = client.get("/api/v1/operator/identities", params={"state": "closed"}, headers=admin)
    assert bad_state.status_code == 422
    file = client.get(f"/api/v1/operator/players/{player.player_id}", headers=analyst).json()
    assert file["identity"]["state"] == "verified"
    assert file["player"]["verified_at"] is not None
    assert file["identity_check"]["last_name"] == "Martin"
    assert file["identity_check"]["document_ref"] == "12AB34567"
    with make_sessionmaker(engine)() as session:
        [(actor, payload)] = session.execute(
            select(AuditRecord.actor, AuditRecord.payload).where(
                AuditRecord.kind == "identity_verified"
            )
        ).all()
    assert actor == "operator:admin@example.org"
    assert '"address":"testclient"' in payload
    assert '"session_id":"' in payload


@pytest.fixture
def verified(client: TestClient, engine: Engine, settings: Settings, player: Player) -> Any:
    """The player, verified; the admin's and an analyst's headers."""
    admin = _admin(client, engine, settings)
    analyst = _admin(client, engine, settings, "analyst")
    assert verify(client, admin, player).status_code == 201
    return admin, analyst


def test_withdrawals_paid_at_once_or_approved_or_rejected(
    client: TestClient, engine: Engine, player: Player, other: Player, verified: Any
) -> None:
    admin, analyst = verified
    player.deposit(500_000)
    small = withdraw(player, 10_000, key="small")
    assert small.status_code == 201, small.text
    body = small.json()
    assert (body["state"], body["amount_cents"], body["iban"]) == ("paid", 10_000, "FR76 •••• 0189")
    assert withdraw(player, 10_000, key="small").json() == body  # a retry: once
    conflict = withdraw(player, 20_000, key="small")
    assert (conflict.status_code, conflict.json()["error"]) == (409, "idempotency_conflict")
    assert player.balance() == 490_000

    big = withdraw(player, 200_000).json()
    rejected = withdraw(player, 150_000).json()
    assert (big["state"], rejected["state"]) == ("requested", "requested")
    assert player.balance() == 140_000
    pending = client.get("/api/v1/operator/withdrawals", headers=analyst).json()
    assert [(w["withdrawal_id"], w["email"], w["iban"]) for w in pending] == [
        (big["withdrawal_id"], player.email, "FR7630006000011234567890189"),
        (rejected["withdrawal_id"], player.email, "FR7630006000011234567890189"),
    ]
    route = "/api/v1/operator/withdrawals/{}/{}"
    assert (
        client.post(route.format(big["withdrawal_id"], "approve"), headers=analyst).status_code
        == 403
    )
    paid = client.post(route.format(big["withdrawal_id"], "approve"), headers=admin)
    assert paid.status_code == 200, paid.text
    assert (paid.json()["state"], paid.json()["decided_by"]) == ("paid", "admin@example.org")
    twice = client.post(route.format(big["withdrawal_id"], "approve"), headers=admin)
    assert (twice.status_code, twice.json()["error"]) == (409, "conflict")
    reject = route.format(rejected["withdrawal_id"], "reject")
    for bad in ({}, {"reason": ""}, {"reason": "x" * 501}, {"reason": "a\x00b"}, {"reason": 3}):
        r = client.post(reject, json=bad, headers=admin)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), bad
    no = client.post(reject, json={"reason": "Le RIB ne correspond pas"}, headers=admin)
    assert no.status_code == 200, no.text
    assert client.post(reject, json={"reason": "again"}, headers=admin).status_code == 409
    assert client.post(route.format(999999, "approve"), headers=admin).status_code == 404
    assert player.balance() == 290_000

    mine = player.get("/withdrawals").json()
    assert [(w["state"], w["amount_cents"], w["reason"]) for w in mine] == [
        ("rejected", 150_000, "Le RIB ne correspond pas"),
        ("paid", 200_000, None),
        ("paid", 10_000, None),
    ]
    assert "decided_by" not in mine[0]  # the player is not told which admin
    assert other.get("/withdrawals").json() == []
    assert client.get("/api/v1/operator/withdrawals", headers=admin).json() == []
    done = client.get(
        "/api/v1/operator/withdrawals", params={"state": "paid"}, headers=admin
    ).json()
    assert [w["amount_cents"] for w in done] == [200_000, 10_000]
    file = client.get(f"/api/v1/operator/players/{player.player_id}", headers=admin).json()
    assert [w["state"] for w in file["withdrawals"]] == ["rejected", "paid", "paid"]
    check = client.post("/api/v1/operator/audit/check", headers=analyst).json()
    assert check["ok"], check


def test_bad_withdrawals_are_refused_and_change_nothing(
    client: TestClient, engine: Engine, player: Player, verified: Any
) -> None:
    player.deposit(1_000)
    for bad in ({}, {"amount_cents": 0}, {"amount_cents": "100"}, {"amount_cents": 1.5},
                {"amount_cents": 10**12}, {"amount_cents": 100, "iban": "FR76"}):  # fmt: skip
        r = player.post("/withdrawals", bad, key=secrets.token_hex(8))
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), bad
    no_key = player.post("/withdrawals", {"amount_cents": 100})
    assert (no_key.status_code, no_key.json()["error"]) == (400, "bad_request")
    short = withdraw(player, 1_001)
    assert (short.status_code, short.json()["error"]) == (402, "insufficient_funds")
    assert client.post("/api/v1/withdrawals", json={"amount_cents": 100}).status_code == 401
    assert player.balance() == 1_000
    assert _count(engine, Withdrawal) == 0
    with make_sessionmaker(engine)() as session:
        refusals = (
            session.execute(
                select(AuditRecord.payload).where(AuditRecord.kind == "withdrawal_refused")
            )
            .scalars()
            .all()
        )
    assert len(refusals) == 1
    assert '"refusal":"insufficient_funds"' in refusals[0]


def _ledger(engine: Engine) -> dict[str, Any]:
    """The books a withdrawal moves: every account's balance, the ledger's transactions and
    entries, the withdrawals."""
    counts = {
        table.__tablename__: _count(engine, table)
        for table in (LedgerTransaction, LedgerEntry, Withdrawal)
    }
    with make_sessionmaker(engine)() as session:
        balances = session.execute(select(Account.id, Account.balance_cents).order_by(Account.id))
        return {"balances": balances.all(), **counts}


def test_a_withdrawal_above_the_balance_is_402_and_moves_nothing(
    engine: Engine, player: Player, verified: Any
) -> None:
    """A cent more than the balance: 402 ``insufficient_funds`` saying why (the withdrawal's
    own refusal, not the database's check on balances, which would be a 500), the balance,
    the ledger and the withdrawals as they were; the balance exactly is paid."""
    player.deposit(1_000)
    before = _ledger(engine)
    over = withdraw(player, 1_001)
    assert (over.status_code, over.json()) == (
        402,
        {
            "error": "insufficient_funds",
            "detail": "amount_cents 1001 is more than the withdrawable balance",
        },
    )
    assert player.balance() == 1_000
    assert _ledger(engine) == before
    exact = withdraw(player, 1_000)
    assert (exact.status_code, exact.json()["state"]) == (201, "paid"), exact.text
    assert player.balance() == 0
