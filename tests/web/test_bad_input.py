"""Bad input on every route: a JSON error with the right status, and nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from pharaon.service import accounts
from pharaon.service.audit import run_audit
from pharaon.store.engine import make_sessionmaker
from pharaon.web.app import create_app
from tests.conftest import Player, app_settings, load_for_sale, make_block

BAD_BODIES: list[tuple[str, str, Any]] = [
    ("POST", "/players", {"email": "a@example.org", "password": "long enough"}),
    ("POST", "/players", {"email": ["a"], "password": "x" * 9, "birth_date": "1990-01-01"}),
    (
        "POST",
        "/players",
        {"email": "a@example.org", "password": "x" * 300, "birth_date": "1990-01-01"},
    ),
    (
        "POST",
        "/players",
        {"email": "a@example.org", "password": "x" * 9, "birth_date": "yesterday"},
    ),
    (
        "POST",
        "/players",
        {"email": "a@ex.org", "password": "x" * 9, "birth_date": "1990-01-01", "x": 1},
    ),
    # A NUL in any string (PostgreSQL refuses it in text): refused at the door, on both.
    (
        "POST",
        "/players",
        {"email": "a\x00@ex.org", "password": "x" * 9, "birth_date": "1990-01-01"},
    ),
    (
        "POST",
        "/players",
        {"email": "a@ex.org", "password": "x\x00" * 9, "birth_date": "1990-01-01"},
    ),
    ("POST", "/sessions", {"email": "a\x00@example.org", "password": "x" * 9}),
    ("PUT", "/me/password", {"current_password": "x" * 9, "new_password": "y\x00" * 9}),
    ("POST", "/me/closure", {"password": "\x00"}),
    ("POST", "/sessions", {"email": "a@example.org"}),
    ("POST", "/sessions", {"email": 1, "password": 2}),
    ("PUT", "/me/limits", {"daily_cents": "100", "weekly_cents": None, "monthly_cents": None}),
    ("PUT", "/me/limits", {"daily_cents": 1.5, "weekly_cents": None, "monthly_cents": None}),
    ("PUT", "/me/limits", {"stake_daily_cents": "100"}),
    ("PUT", "/me/limits", {"loss_weekly_cents": -1}),
    ("PUT", "/me/limits", {"monthly_cents": 10**13}),
    ("PUT", "/me/limits", {"yearly_cents": 100}),
    ("PUT", "/me/limits", {"weekly_cents": None}),  # a moderator removed
    ("PUT", "/me/limits", [100]),
    ("POST", "/me/self-exclusion", {"days": -3}),
    ("POST", "/deposits", {"amount_cents": 0}),
    ("POST", "/deposits", {"amount_cents": -100}),
    ("POST", "/deposits", {"amount_cents": 100_000_001}),
    ("POST", "/deposits", {"amount_cents": "100"}),
    ("POST", "/deposits", {"amount_cents": 10.5}),
    ("POST", "/deposits", {"amount_cents": True}),
    ("POST", "/deposits", {}),
    ("POST", "/deposits", [100]),
    ("POST", "/plays", {"stake_cents": 150, "mode": "auto"}),
    ("POST", "/plays", {"stake_cents": "100", "mode": "auto"}),
    ("POST", "/plays", {"stake_cents": 100.0, "mode": "auto"}),
    ("POST", "/plays", {"stake_cents": 100, "mode": "fast"}),
    ("POST", "/plays", {"stake_cents": 100}),
    ("POST", "/plays", None),
    ("POST", "/plays/1/reveal", {"grid": 0}),
    ("POST", "/plays/1/reveal", {"grid": 5}),
    ("POST", "/plays/1/reveal", {"grid": "1"}),
    ("POST", "/plays/1/reveal", {}),
    ("POST", "/plays/1/reveal", {"grid": 1, "grids": [2]}),
    ("POST", "/plays/1/reveal", {"grids": []}),
    ("POST", "/plays/1/reveal", {"grids": [1, 2, 3, 4, 1]}),
    ("POST", "/plays/1/reveal", {"grids": [0, 1]}),
    ("GET", "/plays/1/grids/0", None),
    ("GET", "/plays/1/grids/5", None),
    ("POST", "/plays/abc/reveal", {"grid": 1}),
    ("POST", "/plays/99999999999999999999/reveal", {"grid": 1}),
    ("GET", "/plays/abc", None),
    ("GET", "/plays/0", None),
    ("GET", "/plays/99999999999999999999", None),
    ("GET", "/plays?limit=-1", None),
    ("GET", "/plays?before=abc", None),
    ("GET", "/prizes/remaining?stake_cents=abc", None),
    ("GET", "/prizes/remaining?stake_cents=250", None),
]


def _funded(engine: Engine, client: TestClient) -> Player:
    """A player with money and a play half revealed, on a block on sale."""
    load_for_sale(engine, make_block(100))
    player = Player(client, "ana@example.org")
    player.deposit(1_000)
    assert player.play(100, "jouer").status_code == 201
    return player


@pytest.fixture
def funded(engine: Engine, client: TestClient) -> Player:
    return _funded(engine, client)


@pytest.fixture(scope="module")
def shared(
    module_engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Engine, Player]]:
    """One funded player for every bad body on a database: each is refused and changes
    nothing (which each test checks), so the next one finds the same state."""
    folder = tmp_path_factory.mktemp("bad-input")
    settings = app_settings(module_engine.url.render_as_string(hide_password=False), folder)
    with TestClient(create_app(settings, engine=module_engine)) as client:
        yield module_engine, _funded(module_engine, client)


@pytest.mark.parametrize(
    ("number", "method", "path", "body"), [(n, *bad) for n, bad in enumerate(BAD_BODIES)]
)
def test_bad_input_is_refused(
    shared: tuple[Engine, Player], number: int, method: str, path: str, body: Any
) -> None:
    engine, funded = shared
    before = funded.get("/me").json(), funded.get("/plays").json()
    r = funded.client.request(
        method,
        f"/api/v1{path}",
        json=body,
        # A key of its own, as a fresh player's would be: a refused body keeps no key.
        headers={**funded.headers, "Idempotency-Key": f"bad-input-{number}"},
    )
    assert r.status_code == 422, r.text
    answer = r.json()
    assert set(answer) == {"error", "detail"}
    assert answer["error"] == "validation_error"
    assert answer["detail"]
    assert (funded.get("/me").json(), funded.get("/plays").json()) == before
    with make_sessionmaker(engine)() as session:
        assert run_audit(connection=session.connection()).ok


@pytest.mark.parametrize(
    "raw", [b"{", b"not json", b'{"amount_cents": 100', '{"amount_cents": "\u00e9"}'.encode()]
)
def test_malformed_json(funded: Player, raw: bytes) -> None:
    before = funded.balance()
    headers = {**funded.headers, "Idempotency-Key": "k", "Content-Type": "application/json"}
    r = funded.client.post("/api/v1/deposits", content=raw, headers=headers)
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")
    assert funded.balance() == before


def test_bad_idempotency_keys(funded: Player) -> None:
    before = funded.balance()
    for key in ("", "   ", "x" * 201):
        r = funded.post("/deposits", {"amount_cents": 100}, key=key)
        assert (r.status_code, r.json()["error"]) == (400, "bad_request"), key
        r = funded.post("/plays", {"stake_cents": 100, "mode": "auto"}, key=key)
        assert (r.status_code, r.json()["error"]) == (400, "bad_request"), key
    assert funded.balance() == before


def test_routes_need_a_session(client: TestClient) -> None:
    for method, path in [
        ("GET", "/me"),
        ("PUT", "/me/limits"),
        ("POST", "/me/self-exclusion"),
        ("POST", "/deposits"),
        ("POST", "/plays"),
        ("POST", "/plays/1/reveal"),
        ("GET", "/plays/1/grids/1"),
        ("GET", "/plays/1"),
        ("GET", "/plays"),
        ("DELETE", "/sessions/current"),
    ]:
        # The body is malformed too: without a session the answer is 401 before it is judged.
        r = client.request(method, f"/api/v1{path}", json={})
        assert r.status_code == 401, (method, path)
        assert r.json()["error"] == "unauthorized"


def test_a_purchase_is_judged_by_its_session_then_by_its_body(
    client: TestClient, player: Player
) -> None:
    # As on every route: the session first (one dependency for all), then the body.
    unknown = {"Authorization": "Bearer no-such-token", "Idempotency-Key": "k"}
    for body in ({}, {"stake_cents": 100, "mode": "auto"}):
        r = client.post("/api/v1/plays", json=body, headers=unknown)
        assert (r.status_code, r.json()["error"]) == (401, "unauthorized")
    known = {**player.headers, "Idempotency-Key": "k"}
    r = client.post("/api/v1/plays", json={}, headers=known)
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")


def test_wrong_method(client: TestClient) -> None:
    r = client.put("/api/v1/players", json={})
    assert r.status_code == 405
    assert set(r.json()) == {"error", "detail"}


# Found by fuzzing (tests/web/test_fuzz.py): the OpenAPI document promised only 2xx and
# FastAPI's own 422 shape, and called the required Idempotency-Key optional.
def test_the_document_declares_the_error_shape_on_every_route(client: TestClient) -> None:
    document = client.get("/api/v1/openapi.json").json()
    assert document["components"]["schemas"]["ErrorOut"]["required"] == ["error", "detail"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status in ("401", "413", "422", "503"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorOut"}, (
                    method,
                    path,
                    status,
                )


@pytest.mark.parametrize("path", ["/api/v1/plays", "/api/v1/deposits"])
def test_the_document_says_the_idempotency_key_is_required(client: TestClient, path: str) -> None:
    operation = client.get("/api/v1/openapi.json").json()["paths"][path]["post"]
    (key,) = [p for p in operation["parameters"] if p["name"] == "Idempotency-Key"]
    assert key["required"] is True
    assert key["schema"]["maxLength"] == 200


# Found by the fault tests (test_faults_*.py): a lost database connection, a full or read-only
# disk answered 500 "internal_error"; it is 503 "unavailable", to be tried again.
@pytest.mark.parametrize(
    "error",
    [
        OperationalError("SELECT 1", {}, Exception("terminating connection")),
        OperationalError("INSERT", {}, Exception("database or disk is full")),
    ],
)
def test_the_database_away_is_503_not_500(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def away(**_kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(accounts, "begin_log_in", away)
    r = client.post("/api/v1/sessions", json={"email": "a@example.org", "password": "x" * 10})
    assert r.status_code == 503
    assert r.json() == {
        "error": "unavailable",
        "detail": "the database is unavailable; try again shortly",
    }
    assert r.headers["Retry-After"] == "5"
