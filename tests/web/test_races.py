"""Every read-then-write around the sale, raced by two application instances on one
PostgreSQL (two apps, two engines, as two servers): a first limit set 16 times at once, 32 wrong
passwords for one account, 8 password changes from the same old password, 8 operator log-ins
with one TOTP code, 8 cool-offs, two admins lifting one suspension and closing one account.
Each check is decided in the database, so the races end as one request alone would: no 500,
one row, no more passwords checked than the lock-out allows, one change, one session."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pyotp
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from pharaon.settings import Settings
from pharaon.store.tables import DepositLimit, PlayerNote, SessionRow
from pharaon.store.tables import Player as PlayerRow
from pharaon.web.app import create_app
from tests.conftest import Player, postgres_schema
from tests.web.test_operator_api import PASSWORD, _log_in, _operator

pytestmark = pytest.mark.postgres


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """PostgreSQL only: SQLite has one writer, and one server process (the same tests hold
    there by construction)."""
    base: str = request.getfixturevalue("postgres_database")
    yield from postgres_schema(base)


@pytest.fixture
def servers(engine: Engine, settings: Settings) -> Iterator[list[TestClient]]:
    """Two application instances on the migrated database, each with its own engine."""
    first, second = TestClient(create_app(settings)), TestClient(create_app(settings))
    with first, second:
        yield [first, second]


def _at_once(
    count: int,
    servers: list[TestClient],
    ask: Callable[[TestClient], Any],
    route: str,
    headers: dict[str, str] | None = None,
) -> list[Any]:
    """``ask`` ``count`` times at the same moment, alternately on each server. Each server is
    first sent a body that is not an object on ``route`` ("METHOD /path", answered 422):
    FastAPI builds a route's body validator on its first request, under
    ``warnings.catch_warnings``, which is not thread-safe (pytest's warnings-as-errors would
    leak into a concurrent first build). (Not ``{}``: a route whose fields are all optional,
    as ``PUT /me/limits``, takes it.)"""
    method, path = route.split()
    for client in servers:
        wrong = client.request(method, f"/api/v1{path}", json=[], headers=headers)
        assert wrong.status_code == 422, wrong.text
    barrier = threading.Barrier(count)

    def one(n: int) -> Any:
        barrier.wait(30)
        return ask(servers[n % len(servers)])

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_a_first_limit_set_at_once(servers: list[TestClient], engine: Engine) -> None:
    player = Player(servers[0], "ana@example.org", moderators=False)
    body = {
        "daily_cents": 1_000,
        "weekly_cents": 4_000,
        "monthly_cents": None,
        "stake_weekly_cents": 2_000,
    }  # fmt: skip — the moderators, set at once

    def put(client: TestClient) -> int:
        return int(client.put("/api/v1/me/limits", json=body, headers=player.headers).status_code)

    codes = _at_once(16, servers, put, "PUT /me/limits", player.headers)
    assert set(codes) == {200}, Counter(codes)
    with engine.connect() as conn:
        periods = conn.execute(
            select(DepositLimit.period, func.count()).group_by(DepositLimit.period)
        ).all()
    assert sorted(periods) == [("daily", 1), ("monthly", 1), ("stake_weekly", 1), ("weekly", 1)]
    assert player.get("/me").json()["limits"]["moderators_set"] is True


def test_wrong_passwords_at_once_check_no_more_than_the_lock_out_allows(
    servers: list[TestClient], settings: Settings
) -> None:
    player = Player(servers[0], "ana@example.org")

    def log_in(client: TestClient, password: str = "wrong password") -> tuple[int, str]:
        r = client.post("/api/v1/sessions", json={"email": player.email, "password": password})
        client.cookies.clear()
        return r.status_code, r.json().get("error", "")

    answers = Counter(_at_once(32, servers, log_in, "POST /sessions"))
    # Counted before the password is checked, in the database: five are checked (401), every
    # other attempt is refused unchecked (429), across both servers.
    assert answers == {
        (401, "unauthorized"): settings.lockout_failures,
        (429, "locked_out"): 32 - settings.lockout_failures,
    }
    assert log_in(servers[1], player.password) == (429, "locked_out")


def test_password_changes_from_one_old_password(servers: list[TestClient]) -> None:
    player = Player(servers[0], "ana@example.org")

    def change(client: TestClient) -> int:
        n = threading.get_ident()
        body = {"current_password": player.password, "new_password": f"new password {n}"}
        return int(client.put("/api/v1/me/password", json=body, headers=player.headers).status_code)

    codes = Counter(_at_once(8, servers, change, "PUT /me/password", player.headers))
    assert codes[204] == 1, codes
    assert set(codes) <= {204, 403, 409}, codes  # the others: the old password is no more


def test_one_totp_code_opens_one_session(
    servers: list[TestClient], engine: Engine, settings: Settings
) -> None:
    secret = _operator(engine, settings, "ops@example.org", "admin")
    code = pyotp.TOTP(secret).now()

    def log_in(client: TestClient) -> int:
        body = {"email": "ops@example.org", "password": PASSWORD, "totp_code": code}
        r = client.post("/api/v1/operator/sessions", json=body)
        client.cookies.clear()
        return int(r.status_code)

    codes = Counter(_at_once(8, servers, log_in, "POST /operator/sessions"))
    assert codes[200] == 1, codes
    # The others: the code already used (401), then, failures counted, the lock-out (429).
    assert set(codes) <= {200, 401, 429}, codes
    with engine.connect() as conn:
        opened = conn.execute(
            select(func.count()).where(SessionRow.operator_id.is_not(None))
        ).scalar_one()
    assert opened == 1


def test_cool_offs_at_once_keep_the_longest(servers: list[TestClient], engine: Engine) -> None:
    player = Player(servers[0], "ana@example.org")
    asked = itertools.count()

    def pause(client: TestClient) -> str:
        hours = 168 if next(asked) % 2 else 24
        r = client.post("/api/v1/me/cool-off", json={"hours": hours}, headers=player.headers)
        assert r.status_code == 200, r.text
        return str(r.json()["until"])

    ends = _at_once(8, servers, pause, "POST /me/cool-off", player.headers)
    with engine.connect() as conn:
        kept = conn.execute(select(PlayerRow.self_excluded_until)).scalar_one()
    # Never shortened: the pause in force ends with the latest end any request was told.
    assert kept is not None
    assert kept.isoformat() == max(ends, key=datetime.fromisoformat).replace("Z", "+00:00")


def test_two_admins_lift_one_suspension_once(
    servers: list[TestClient], engine: Engine, settings: Settings
) -> None:
    player = Player(servers[0], "ana@example.org")
    admins = []
    for n, client in enumerate(servers):
        secret = _operator(engine, settings, f"ops{n}@example.org", "admin")
        admins.append(_log_in(client, f"ops{n}@example.org", secret))
    route = f"/api/v1/operator/players/{player.player_id}/measures"
    suspend = {"measure": "suspend", "reason": "checks"}
    assert servers[0].post(route, json=suspend, headers=admins[0]).status_code == 201

    def act(measure: str) -> Callable[[TestClient], int]:
        def one(client: TestClient) -> int:
            headers = admins[servers.index(client)]
            body = {"measure": measure, "reason": f"{measure} at once"}
            return int(client.post(route, json=body, headers=headers).status_code)

        return one

    lifts = Counter(_at_once(8, servers, act("lift"), f"POST {route[7:]}", admins[0]))
    assert lifts == {201: 1, 409: 7}
    closures = Counter(_at_once(8, servers, act("close"), f"POST {route[7:]}", admins[0]))
    assert closures == {201: 1, 409: 7}
    with engine.connect() as conn:
        kinds = Counter(conn.execute(select(PlayerNote.measure)).scalars())
    assert kinds == {"suspend": 1, "lift": 1, "close": 1}
