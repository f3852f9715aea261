"""An admin acts on a player through ``POST /operator/players/{id}/measures``, on both
databases: an analyst may not; bad bodies are 422 and change nothing; the player reads each
measure and its reason (``GET /me``, ``GET /me/notes``, the purchase's and deposit's 403
``suspended``, the log-in's 403 ``account_closed``); the back office's file lists them with the
operator's name, and the audit log has them under it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord
from tests.conftest import BlockLoader, Player
from tests.web.test_operator_api import _log_in, _operator


def _admin(client: TestClient, engine: Engine, settings: Settings, role: str = "admin") -> Any:
    email = f"{role}@example.org"
    return _log_in(client, email, _operator(engine, settings, email, role))


def test_suspend_then_lift_as_the_player_sees_it(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    player.deposit(500)
    admin = _admin(client, engine, settings)
    analyst = _admin(client, engine, settings, "analyst")
    route = f"/api/v1/operator/players/{player.player_id}/measures"
    suspend = {"measure": "suspend", "reason": "payment under review"}
    assert client.post(route, json=suspend, headers=analyst).status_code == 403
    for bad in (
        {"measure": "suspend"},
        {"measure": "suspend", "reason": ""},
        {"measure": "suspend", "reason": "x" * 501},
        {"measure": "suspend", "reason": "a\x00b"},
        {"measure": "freeze", "reason": "x"},
        {"measure": "exclude", "reason": "x"},  # no days
        {"measure": "exclude", "reason": "x", "days": 0},
        {"measure": "exclude", "reason": "x", "days": "7"},
        {"measure": "suspend", "reason": "x", "days": 7},
        {"measure": "note", "reason": "   "},
    ):
        r = client.post(route, json=bad, headers=admin)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), (bad, r.text)
    missing = client.post("/api/v1/operator/players/999999/measures", json=suspend, headers=admin)
    assert missing.status_code == 404
    assert player.get("/me/notes").json() == []

    taken = client.post(route, json=suspend, headers=admin)
    assert taken.status_code == 201, taken.text
    assert taken.json()["operator"] == "admin@example.org"
    me = player.get("/me").json()
    assert (me["suspended"], me["suspended_until"]) == (True, None)
    refused = player.play()
    assert (refused.status_code, refused.json()["error"]) == (403, "suspended")
    deposit = player.post("/deposits", {"amount_cents": 100}, key="after")
    assert (deposit.status_code, deposit.json()["error"]) == (403, "suspended")
    assert player.balance() == 500
    [note] = player.get("/me/notes").json()
    assert (note["measure"], note["reason"], note["operator"]) == (
        "suspend",
        "payment under review",
        None,  # the player is not told which operator
    )

    lift = {"measure": "lift", "reason": "payment cleared"}
    assert client.post(route, json=lift, headers=admin).status_code == 201
    assert client.post(route, json=lift, headers=admin).status_code == 409
    assert player.get("/me").json()["suspended"] is False
    assert player.play().status_code == 201
    file = client.get(f"/api/v1/operator/players/{player.player_id}", headers=analyst).json()
    assert [(n["measure"], n["operator"]) for n in file["notes"]] == [
        ("lift", "admin@example.org"),
        ("suspend", "admin@example.org"),
    ]
    with make_sessionmaker(engine)() as session:
        records = session.execute(
            select(AuditRecord.kind, AuditRecord.actor)
            .where(AuditRecord.kind.like("player_%"))
            .order_by(AuditRecord.seq)
        ).all()
    assert [tuple(r) for r in records] == [
        ("player_suspend", "operator:admin@example.org"),
        ("player_lift", "operator:admin@example.org"),
    ]


def test_an_exclusion_has_an_end_the_player_is_told(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    player.deposit(500)
    admin = _admin(client, engine, settings)
    route = f"/api/v1/operator/players/{player.player_id}/measures"
    body = {"measure": "exclude", "reason": "signs of excessive play", "days": 30}
    taken = client.post(route, json=body, headers=admin).json()
    me = player.get("/me").json()
    assert me["suspended"] is True
    assert me["suspended_until"] == taken["until"]
    refused = player.play().json()
    assert (refused["error"], refused["until"]) == (
        "suspended",
        taken["until"].replace("Z", "+00:00"),
    )
    [line] = client.get("/api/v1/operator/players", params={"email": "ana"}, headers=admin).json()
    assert (line["suspended"], line["suspended_until"]) == (True, taken["until"])


def test_a_closed_account_is_told_so_at_log_in(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    admin = _admin(client, engine, settings)
    route = f"/api/v1/operator/players/{player.player_id}/measures"
    body = {"measure": "close", "reason": "the player asked by letter"}
    assert client.post(route, json=body, headers=admin).status_code == 201
    assert player.get("/me").status_code == 401  # its session ended
    wrong = client.post("/api/v1/sessions", json={"email": player.email, "password": "nope nope"})
    assert wrong.status_code == 401
    right = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": player.password}
    )
    assert (right.status_code, right.json()["error"]) == (403, "account_closed")
    assert right.json()["reason"] == "the player asked by letter"
    assert datetime.fromisoformat(right.json()["closed_at"]) <= datetime.now(UTC)
    assert "token" not in right.json()
    again = client.post(route, json=body, headers=admin)
    assert (again.status_code, again.json()["error"]) == (409, "conflict")
    note = {"measure": "note", "reason": "balance sent back"}
    assert client.post(route, json=note, headers=admin).status_code == 201
