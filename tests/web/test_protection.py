"""The player's protection: cool-off (24 h to 7 days) and password change, each an audit
record; on both databases."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Account, AuditRecord
from tests.conftest import BlockLoader, Player


def _records(engine: Engine, kind: str) -> list[str]:
    with make_sessionmaker(engine)() as session:
        return list(
            session.execute(select(AuditRecord.actor).where(AuditRecord.kind == kind)).scalars()
        )


def test_cool_off_stops_play_and_deposits(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    player.deposit(500)
    for hours in (23, 169, "24"):
        assert player.post("/me/cool-off", {"hours": hours}).status_code == 422
    before = utcnow()
    r = player.post("/me/cool-off", {"hours": 48})
    assert r.status_code == 200, r.text
    until = datetime.fromisoformat(r.json()["until"])
    assert before + timedelta(hours=48) <= until <= utcnow() + timedelta(hours=48)
    # Each refusal calls it a cool-off, with its end; so does GET /me.
    for r in (player.play(100), player.post("/deposits", {"amount_cents": 100}, key="after")):
        assert r.status_code == 403
        body = r.json()
        assert (body["error"], body["pause"]) == ("self_excluded", "cool_off")
        assert datetime.fromisoformat(body["until"]) == until
        assert body["detail"].startswith("on a cool-off until ")
    me = player.get("/me").json()
    assert me["pause_kind"] == "cool_off"
    assert datetime.fromisoformat(me["self_excluded_until"]) == until
    assert _records(engine, "cool_off") == [f"player:{player.player_id}"]
    # A self-exclusion ending later is what the pause is from then on.
    assert player.post("/me/self-exclusion", {"days": 30}).status_code == 200
    r = player.play(100)
    assert (r.json()["error"], r.json()["pause"]) == ("self_excluded", "self_exclusion")
    assert player.get("/me").json()["pause_kind"] == "self_exclusion"


def test_password_change_ends_other_sessions(
    client: TestClient, engine: Engine, player: Player
) -> None:
    other = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": player.password}
    ).json()["token"]
    client.cookies.clear()
    wrong = player.put("/me/password", {"current_password": "nope nope", "new_password": "x" * 12})
    assert wrong.status_code == 403  # not 401: the session itself is fine
    short = player.put(
        "/me/password", {"current_password": player.password, "new_password": "short"}
    )
    assert short.status_code == 422
    done = player.put(
        "/me/password", {"current_password": player.password, "new_password": "a new passphrase"}
    )
    assert done.status_code == 204, done.text
    assert player.get("/me").status_code == 200
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {other}"}).status_code == 401
    old = client.post("/api/v1/sessions", json={"email": player.email, "password": player.password})
    assert old.status_code == 401
    new = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": "a new passphrase"}
    )
    assert new.status_code == 200
    assert _records(engine, "password_changed") == [f"player:{player.player_id}"]


def test_limit_and_exclusion_changes_are_audited(engine: Engine, client: TestClient) -> None:
    player = Player(client, "ana@example.org", moderators=False)
    r = player.put("/me/limits", {"daily_cents": 1_000, "weekly_cents": 10**9, "monthly_cents": 0})
    assert r.status_code == 200, r.text
    with make_sessionmaker(engine)() as session:
        payload = session.execute(
            select(AuditRecord.payload).where(AuditRecord.kind == "deposit_limits")
        ).scalar_one()
    assert '"daily_cents":1000' in payload
    assert '"monthly_cents":0' in payload
    assert player.post("/me/self-exclusion", {"days": 30}).status_code == 200
    assert _records(engine, "self_exclusion") == [f"player:{player.player_id}"]


def test_account_closure(client: TestClient, engine: Engine, player: Player) -> None:
    player.deposit(700)
    assert player.post("/me/closure", {"password": "wrong one!"}).status_code == 403
    assert player.post("/me/closure", {"password": player.password}).status_code == 204
    assert player.get("/me").status_code == 401
    again = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": player.password}
    )
    assert (again.status_code, again.json()["error"]) == (403, "account_closed")
    assert "token" not in again.json()
    assert _records(engine, "account_closed") == [f"player:{player.player_id}"]
    with make_sessionmaker(engine)() as session:
        balance = session.execute(
            select(Account.balance_cents).where(Account.player_id == player.player_id)
        ).scalar_one()
    assert balance == 700


def test_a_play_past_the_loss_limit_is_refused(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    player.deposit(1_000)
    body = {"daily_cents": None, "weekly_cents": 10**9, "monthly_cents": None}
    r = player.put("/me/limits", {**body, "loss_weekly_cents": 100})
    assert r.status_code == 200, r.text
    assert r.json()["loss_weekly_cents"] == 100
    assert player.put("/me/limits", {**body, "loss_weekly_cents": -1}).status_code == 422
    assert player.play(100, mode="jouer").status_code == 201  # its lot waits: a loss of 1 €
    refused = player.play(100, mode="jouer")
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == "loss_limit"
    # A body without the loss limit leaves it as it is.
    assert player.put("/me/limits", body).json()["loss_weekly_cents"] == 100
    assert player.get("/me").json()["limits"]["loss_weekly_cents"] == 100
    assert _records(engine, "loss_limit") == [f"player:{player.player_id}"]


def test_the_reality_check_setting_and_the_session_figures(
    client: TestClient, engine: Engine, load: BlockLoader, player: Player
) -> None:
    assert player.get("/me").json()["reality_check_minutes"] is None
    for wrong in (7, "15", 0):
        assert player.put("/me/reality-check", {"minutes": wrong}).status_code == 422
    r = player.put("/me/reality-check", {"minutes": 15})
    assert r.status_code == 200, r.text
    assert player.get("/me").json()["reality_check_minutes"] == 15
    assert _records(engine, "reality_check") == [f"player:{player.player_id}"]

    load(100, size=30)
    player.deposit(1_000)
    autos = [player.play(100).json() for _ in range(2)]
    jouer = player.play(100, mode="jouer").json()
    figures = player.get("/me/session").json()
    wins = sum(p["prize_cents"] for p in autos)  # the jouer lot is not credited yet
    assert (figures["stakes_cents"], figures["wins_cents"]) == (300, wins)
    assert figures["net_cents"] == wins - 300
    assert figures["reality_check_minutes"] == 15
    assert 0 <= figures["elapsed_seconds"] < 60
    for grid in (1, 2, 3, 4):
        done = player.post(f"/plays/{jouer['play_id']}/reveal", {"grid": grid})
        assert done.status_code == 200, done.text
    lot = done.json()["prize_cents"]
    assert player.get("/me/session").json()["net_cents"] == wins + lot - 300
    # Another log-in starts a session of its own: nothing played in it yet.
    token = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": player.password}
    ).json()["token"]
    client.cookies.clear()
    fresh = client.get("/api/v1/me/session", headers={"Authorization": f"Bearer {token}"})
    assert (fresh.json()["stakes_cents"], fresh.json()["net_cents"]) == (0, 0)
    assert player.put("/me/reality-check", {"minutes": None}).json() == {"minutes": None}


def test_every_protection_change_is_one_audit_record(engine: Engine, client: TestClient) -> None:
    player = Player(client, "ana@example.org", moderators=False)
    body = {"daily_cents": 5_000, "weekly_cents": 10**9, "monthly_cents": None}
    assert player.put("/me/limits", {**body, "loss_weekly_cents": 2_000}).status_code == 200
    assert player.put("/me/reality-check", {"minutes": 30}).status_code == 200
    assert player.post("/me/cool-off", {"hours": 24}).status_code == 200
    assert player.post("/me/self-exclusion", {"days": 2}).status_code == 200
    with make_sessionmaker(engine)() as session:
        rows = session.execute(
            select(AuditRecord.kind, AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.actor == f"player:{player.player_id}")
            .order_by(AuditRecord.seq)
        ).all()
        assert run_audit(connection=session.connection()).ok
    assert [kind for kind, _, _ in rows] == [
        "account_opened",
        "login",
        "deposit_limits",
        "loss_limit",
        "reality_check",
        "cool_off",
        "self_exclusion",
    ]
    payloads = [json.loads(payload) for _, _, payload in rows[2:]]
    # Each with where it came from, for the regulator's trace (service/traces.py).
    seen = {"session_id": payloads[0]["session_id"], "address": "testclient"}
    assert len(str(seen["session_id"])) == 16
    assert payloads[1] == {
        "player_id": player.player_id,
        "loss_weekly_cents": 2_000,
        "limits_after": {"loss": [2_000, None, None]},
        **seen,
    }
    assert payloads[2] == {"player_id": player.player_id, "minutes": 30, **seen}
    assert payloads[3]["hours"] == 24
    assert payloads[4]["days"] == 2
