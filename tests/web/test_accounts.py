"""Lock-out, session expiry, deposit limits and self-exclusion, and the password hashing
chosen by the settings, through the API."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from argon2 import extract_parameters
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, update

from pharaon.service import passwords
from pharaon.settings import Settings
from pharaon.store.tables import DepositLimit, LoginFailure, SessionRow
from pharaon.store.tables import Player as PlayerRow
from pharaon.web.app import create_app, create_app_from_env
from tests.conftest import BlockLoader, Player


def _log_in(client: TestClient, email: str, password: str) -> tuple[int, str]:
    r = client.post("/api/v1/sessions", json={"email": email, "password": password})
    client.cookies.clear()
    return r.status_code, r.json().get("error", "")


def test_lock_out_after_five_failures(client: TestClient, engine: Engine, player: Player) -> None:
    for _ in range(5):
        assert _log_in(client, player.email, "wrong password") == (401, "unauthorized")
    assert _log_in(client, player.email, player.password) == (429, "locked_out")
    assert _log_in(client, "nobody@example.org", "whatever1") == (401, "unauthorized")
    with engine.begin() as conn:  # fifteen minutes later
        conn.execute(
            update(LoginFailure).values(locked_until=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert _log_in(client, player.email, player.password) == (200, "")


def test_a_good_login_resets_the_count(client: TestClient, player: Player) -> None:
    for _ in range(4):
        assert _log_in(client, player.email, "wrong password") == (401, "unauthorized")
    assert _log_in(client, player.email, player.password) == (200, "")
    for _ in range(4):
        assert _log_in(client, player.email, "wrong password") == (401, "unauthorized")
    assert _log_in(client, player.email, player.password) == (200, "")


def test_sessions_expire_after_inactivity(engine: Engine, player: Player) -> None:
    assert player.get("/me").status_code == 200
    with engine.begin() as conn:
        conn.execute(
            update(SessionRow).values(last_seen_at=datetime.now(UTC) - timedelta(minutes=29))
        )
    assert player.get("/me").status_code == 200  # a request keeps it alive
    with engine.begin() as conn:
        conn.execute(
            update(SessionRow).values(last_seen_at=datetime.now(UTC) - timedelta(minutes=31))
        )
    r = player.get("/me")
    assert (r.status_code, r.json()["error"]) == (401, "unauthorized")


def test_moderators_then_deposit_limits(engine: Engine, client: TestClient) -> None:
    player = Player(client, "ana@example.org", moderators=False)
    r = player.post("/deposits", {"amount_cents": 600}, key="early")
    assert (r.status_code, r.json()["error"]) == (403, "moderators_required")
    assert "weekly stake ceiling" in r.json()["detail"]
    r = player.put(
        "/me/limits",
        {"daily_cents": 1_000, "weekly_cents": 9_000, "monthly_cents": 5_000,
         "stake_weekly_cents": 2_000},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json() == {
        "daily_cents": 1_000,
        "weekly_cents": 9_000,
        "monthly_cents": 5_000,
        "loss_weekly_cents": None,
        "stake_daily_cents": None,
        "stake_weekly_cents": 2_000,
        "stake_monthly_cents": None,
        "moderators_set": True,
        "pending": [],
    }
    assert player.post("/deposits", {"amount_cents": 600}, key="early").status_code == 201
    r = player.post("/deposits", {"amount_cents": 500}, key="over")
    assert (r.status_code, r.json()["error"]) == (403, "deposit_limit")
    assert player.balance() == 600
    # A moderator is never removed; left out of the body, a stake limit is kept.
    body = {"daily_cents": 1_000, "weekly_cents": None, "monthly_cents": 5_000}
    r = player.put("/me/limits", body)
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")
    assert "weekly_cents is a moderator" in r.json()["detail"]
    # Raising waits 48 hours; the old limit holds meanwhile.
    limits = player.put(
        "/me/limits", {"daily_cents": 3_000, "weekly_cents": 9_000, "monthly_cents": 5_000}
    ).json()
    assert (limits["daily_cents"], limits["stake_weekly_cents"]) == (1_000, 2_000)
    [pending] = limits["pending"]
    assert pending["period"] == "daily"
    assert pending["amount_cents"] == 3_000
    effective = datetime.fromisoformat(pending["effective_at"])
    assert timedelta(hours=47) < effective - datetime.now(UTC) <= timedelta(hours=48)
    assert player.post("/deposits", {"amount_cents": 500}, key="still-over").status_code == 403
    with engine.begin() as conn:
        conn.execute(
            update(DepositLimit)
            .where(DepositLimit.period == "daily")
            .values(pending_effective_at=datetime.now(UTC) - timedelta(1))
        )
    assert player.get("/me").json()["limits"]["daily_cents"] == 3_000
    assert player.deposit(500) == 1_100
    # Lowering applies at once, and the monthly limit counts too.
    r = player.put(
        "/me/limits", {"daily_cents": 3_000, "weekly_cents": 100, "monthly_cents": 5_000}
    )
    assert r.json()["weekly_cents"] == 100
    assert player.post("/deposits", {"amount_cents": 1}, key="weekly").status_code == 403
    r = player.put("/me/limits", {"daily_cents": -1, "weekly_cents": 100, "monthly_cents": None})
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")
    r = player.put(
        "/me/limits",
        {"daily_cents": None, "weekly_cents": 100, "monthly_cents": None,
         "stake_weekly_cents": -1},
    )  # fmt: skip
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")


def test_a_limit_left_out_keeps_its_raise_waiting(engine: Engine, client: TestClient) -> None:
    """Issue 37: the weekly deposit limit raised from 100 EUR to 200 EUR (waiting 48 hours),
    then the weekly stake limit lowered: each body names only what it changes, and the raise
    still waits."""
    player = Player(client, "ana@example.org", moderators=False)
    r = player.put("/me/limits", {"weekly_cents": 10_000, "stake_weekly_cents": 5_000})
    assert r.status_code == 200, r.text
    assert r.json()["moderators_set"] is True
    raised = player.put("/me/limits", {"weekly_cents": 20_000}).json()
    assert raised["weekly_cents"] == 10_000
    [waiting] = raised["pending"]
    assert (waiting["period"], waiting["amount_cents"]) == ("weekly", 20_000)
    lowered = player.put("/me/limits", {"stake_weekly_cents": 2_000})
    assert lowered.status_code == 200, lowered.text
    assert (lowered.json()["weekly_cents"], lowered.json()["stake_weekly_cents"]) == (10_000, 2_000)
    assert lowered.json()["pending"] == [waiting]
    # An empty body changes nothing; null is still "no limit" (a removal waits like a raise).
    assert player.put("/me/limits", {}).json() == lowered.json()
    removal = player.put("/me/limits", {"daily_cents": None, "monthly_cents": 50_000}).json()
    assert (removal["daily_cents"], removal["monthly_cents"]) == (None, 50_000)
    assert removal["pending"] == [waiting]
    # The moderators rule holds on a body of one field.
    r = player.put("/me/limits", {"weekly_cents": None})
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")
    assert "weekly_cents is a moderator" in r.json()["detail"]
    assert player.get("/me").json()["limits"]["pending"] == [waiting]
    # The old ceiling holds until the raise is due, then the new one.
    assert player.deposit(10_000) == 10_000
    r = player.post("/deposits", {"amount_cents": 1}, key="over")
    assert (r.status_code, r.json()["error"]) == (403, "deposit_limit")
    with engine.begin() as conn:
        conn.execute(
            update(DepositLimit)
            .where(DepositLimit.period == "weekly")
            .values(pending_effective_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert player.get("/me").json()["limits"]["weekly_cents"] == 20_000
    assert player.deposit(10_000) == 20_000
    # Lowering that same limit is what ends a raise waiting: at once.
    assert player.put("/me/limits", {"weekly_cents": 30_000}).json()["pending"] != []
    again = player.put("/me/limits", {"weekly_cents": 15_000}).json()
    assert (again["weekly_cents"], again["pending"]) == (15_000, [])


def test_a_stake_past_a_stake_limit_is_refused(load: BlockLoader, player: Player) -> None:
    load(100)
    player.deposit(1_000)
    body = {"daily_cents": None, "weekly_cents": 10**9, "monthly_cents": None,
            "stake_daily_cents": 200}  # fmt: skip
    assert player.put("/me/limits", body).status_code == 200
    assert player.play(100).status_code == 201
    assert player.play(100).status_code == 201
    before = player.balance()
    r = player.play(100)
    assert (r.status_code, r.json()["error"]) == (403, "stake_limit")
    assert r.json()["detail"] == (
        "stake limit 200 cents per 24 hours: 200 cents staked in the period, "
        "a stake of 100 more would pass it"
    )
    assert player.balance() == before
    assert len(player.get("/plays").json()["plays"]) == 2


def test_self_exclusion(load: BlockLoader, player: Player) -> None:
    load(100)
    player.deposit(500)
    r = player.post("/me/self-exclusion", {"days": 7})
    assert r.status_code == 200, r.text
    until = datetime.fromisoformat(r.json()["self_excluded_until"])
    assert timedelta(days=6, hours=23) < until - datetime.now(UTC) <= timedelta(days=7)
    r = player.post("/deposits", {"amount_cents": 100}, key="x")
    assert (r.status_code, r.json()["error"]) == (403, "self_excluded")
    r = player.play(100)
    assert (r.status_code, r.json()["error"]) == (403, "self_excluded")
    assert player.balance() == 500
    assert player.get("/plays").status_code == 200  # the history stays readable
    shorter = player.post("/me/self-exclusion", {"days": 1}).json()
    assert datetime.fromisoformat(shorter["self_excluded_until"]) == until  # never shortened
    for bad in ({"days": 0}, {"days": 3651}, {"days": "7"}, {}):
        r = player.post("/me/self-exclusion", bad)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), bad


def test_many_sign_ups_at_once_all_finish(client: TestClient) -> None:
    # Regression: with the commit after the route, 32 sign-ups at once took the 10 routes'
    # threads waiting for SQLite's writer, held by a transaction whose commit waited for one.
    def sign_up(n: int) -> int:
        body = {
            "email": f"rush{n}@example.org",
            "password": "long enough",
            "birth_date": "1990-05-17",
        }
        status: int = client.post("/api/v1/players", json=body).status_code
        return status

    with ThreadPoolExecutor(32) as pool:
        futures = [pool.submit(sign_up, n) for n in range(32)]
        assert [f.result(timeout=60) for f in futures] == [201] * 32


def test_the_server_hashes_with_the_parameters_its_settings_name(
    engine: Engine, settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Production's in a server so set; the fast ones in a server told so by the environment
    alone, as a worker process is: its sign-ups, and a production hash rehashed at log-in."""

    def memory_kib() -> dict[str, int]:
        with engine.connect() as conn:
            rows = conn.execute(select(PlayerRow.email, PlayerRow.password_hash)).all()
        return {email: extract_parameters(hashed).memory_cost for email, hashed in rows}

    found = passwords.in_force()
    try:
        production = settings.model_copy(update={"password_hashing": "production"})
        with TestClient(create_app(production, engine=engine)) as client:
            Player(client, "ana@example.org", moderators=False)
        assert memory_kib() == {"ana@example.org": 19_456}

        monkeypatch.setenv("PHARAON_PASSWORD_HASHING", "fast-insecure-for-tests")
        monkeypatch.setenv("PHARAON_DATABASE_URL", database_url)
        monkeypatch.setenv("PHARAON_KEYS_DIR", str(settings.keys_dir))
        with TestClient(create_app_from_env()) as client:
            Player(client, "bob@example.org", moderators=False)
            assert _log_in(client, "ana@example.org", "correct horse") == (200, "")
            assert _log_in(client, "nobody@example.org", "correct horse") == (401, "unauthorized")
        assert memory_kib() == {"ana@example.org": 8, "bob@example.org": 8}
    finally:
        passwords.use(found)
