"""Running it (web/observe.py): the health check with the database there and away, the
Prometheus metrics (route templates, purchases, the gauges read at scrape time, all workers of
a server counted) and the JSON access log of ``pharaon serve``."""

from __future__ import annotations

import json
import logging
import re
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import Counter
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, select

from pharaon.settings import Settings
from pharaon.store.engine import make_engine
from pharaon.store.migrate import upgrade
from pharaon.store.tables import Player as PlayerRow
from pharaon.web.app import create_app
from pharaon.web.jsonlog import ACCESS_LOGGER, JsonFormatter
from pharaon.web.routers import meta
from tests.conftest import BlockLoader, Player, load_for_sale, make_block
from tests.web.cluster import Cluster
from tests.web.live import http
from tests.web.test_live import _sign_up
from tests.web.test_operator_api import _log_in, _operator
from tests.web.test_serve import (
    _connections_by_process,
    _idle,
    _serve,
    _stop,
    _wait,
    _workers,
)

AWAY = {"error": "unavailable", "detail": "the database is unavailable; try again shortly"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _samples(text: str) -> Samples:
    """Every sample of a scrape, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _routes(samples: Samples) -> set[str]:
    return {
        dict(labels)["route"] for name, labels in samples if name == "pharaon_http_requests_total"
    }


def _assert_away(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json() == AWAY
    assert response.headers["Retry-After"] == "5"


def test_health_is_ok(client: TestClient) -> None:
    r = client.get("/api/v1/health")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}
    # Documented with its 503, and /metrics stays out of the API's schema (the fuzz test).
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert "503" in paths["/api/v1/health"]["get"]["responses"]
    assert "/metrics" not in paths


def test_health_answers_503_when_the_sqlite_file_is_gone(tmp_path: Path) -> None:
    folder = tmp_path / "var"
    url = f"sqlite:///{folder / 'pharaon.db'}"
    engine = make_engine(url)
    upgrade(engine)
    try:
        with TestClient(create_app(Settings(database_url=url), engine=engine)) as client:
            assert client.get("/api/v1/health").status_code == 200
            shutil.rmtree(folder)  # the pooled connections still read the removed file
            _assert_away(client.get("/api/v1/health"))
    finally:
        engine.dispose()


def test_health_answers_503_when_the_database_is_too_slow(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions = client.app.state.database.transactions  # type: ignore[attr-defined]
    answer = transactions.ping
    hang = threading.Event()
    monkeypatch.setattr(meta, "HEALTH_TIMEOUT_SECONDS", 0.1)
    pings: list[bool] = []
    answered = threading.Event()  # the hanging ping returned

    def hanging() -> None:
        pings.append(True)
        hang.wait(60)
        answered.set()

    monkeypatch.setattr(transactions, "ping", hanging)
    started = time.monotonic()
    _assert_away(client.get("/api/v1/health"))
    _assert_away(client.get("/api/v1/health"))  # the first ping is still out: no second one
    assert not answered.is_set()  # neither waited for the ping: it still hangs
    while not pings:  # the ping's thread may start after the check gave up on it (a busy host)
        assert time.monotonic() - started < 30
        time.sleep(0.01)
    assert len(pings) == 1
    monkeypatch.setattr(transactions, "ping", answer)
    hang.set()  # the database answers the ping left behind: the next check pings again
    deadline = time.monotonic() + 5
    while (r := client.get("/api/v1/health")).status_code != 200:
        assert time.monotonic() < deadline, r.text
        time.sleep(0.05)


@pytest.mark.postgres
@pytest.mark.faults
def test_health_follows_postgresql_stopped_and_started(cluster: Cluster) -> None:
    engine = make_engine(cluster.url())
    upgrade(engine)
    try:
        with TestClient(create_app(Settings(database_url=cluster.url()), engine=engine)) as client:
            assert client.get("/api/v1/health").status_code == 200
            cluster.stop()
            for _ in range(3):  # each pooled connection is found dead, none answers 200
                _assert_away(client.get("/api/v1/health"))
            cluster.start()
            # The same application recovers: the pool reconnects.
            deadline = time.monotonic() + 20
            while (r := client.get("/api/v1/health")).status_code != 200:
                assert time.monotonic() < deadline, r.text
                time.sleep(0.2)
            assert r.json() == {"status": "ok"}
    finally:
        engine.dispose()


def test_metrics_count_routes_purchases_and_read_the_gauges(
    client: TestClient, load: BlockLoader, player: Player
) -> None:
    load(100, size=50)
    load(200, size=40)
    player.deposit(5_000)
    first = player.play(100, "auto", key="k-1")
    assert first.status_code == 201
    assert player.play(100, "auto", key="k-1").json() == first.json()  # a retry, not a sale
    assert player.play(100, "auto").status_code == 201
    jouer = player.play(200, "jouer")
    assert jouer.status_code == 201
    play_id = jouer.json()["play_id"]
    assert player.get(f"/plays/{play_id}").status_code == 200
    assert player.get("/plays/999999").status_code == 404
    assert client.get(f"/nothing/here/{play_id}").status_code == 404

    before = _samples(client.get("/metrics").text)
    assert _value(before, "pharaon_pending_reveals") == 1
    assert _value(before, "pharaon_database_up") == 1
    assert _value(before, "pharaon_pool_units_sold", price_cents="100") == 2
    assert _value(before, "pharaon_pool_units_remaining", price_cents="100") == 48
    assert _value(before, "pharaon_pool_units_sold", price_cents="200") == 1
    assert _value(before, "pharaon_pool_units_remaining", price_cents="200") == 39
    assert _value(before, "pharaon_purchases_total", stake_cents="100", mode="auto") == 2
    assert _value(before, "pharaon_purchases_total", stake_cents="200", mode="jouer") == 1
    assert _value(before, "pharaon_purchase_stakes_cents_total", mode="auto") == 200
    assert _value(before, "pharaon_purchase_stakes_cents_total", mode="jouer") == 200
    posted = {"method": "POST", "route": "/api/v1/plays"}
    assert _value(before, "pharaon_http_requests_total", status="201", **posted) == 4
    assert _value(before, "pharaon_http_request_duration_seconds_count", **posted) == 4
    # One after the other, each purchase (the retry too) is a batch of its own at the sale.
    assert _value(before, "pharaon_db_batch_size_count", door="sell") == 4
    assert _value(before, "pharaon_db_batch_size_sum", door="sell") == 4
    assert _value(before, "pharaon_db_batch_size_bucket", door="sell", le="1.0") == 4
    one = {"method": "GET", "route": "/api/v1/plays/{play_id}"}
    assert _value(before, "pharaon_http_requests_total", status="200", **one) == 1
    assert _value(before, "pharaon_http_requests_total", status="404", **one) == 1
    unmatched = {"method": "GET", "route": "unmatched", "status": "404"}
    assert _value(before, "pharaon_http_requests_total", **unmatched) == 1
    # Templates only: never a path with an id in it.
    assert not [route for route in _routes(before) if re.search(r"/\d+(/|$)", route)]

    for grid in (1, 2, 3, 4):
        assert player.post(f"/plays/{play_id}/reveal", {"grid": grid}).status_code == 200
    after = _samples(client.get("/metrics").text)
    assert _value(after, "pharaon_pending_reveals") == 0
    reveals = {"method": "POST", "route": "/api/v1/plays/{play_id}/reveal", "status": "200"}
    assert _value(after, "pharaon_http_requests_total", **reveals) == 4
    assert _value(after, "pharaon_db_batch_size_sum", door="reveal") == 4
    scraped = {"method": "GET", "route": "/metrics", "status": "200"}
    assert _value(after, "pharaon_http_requests_total", **scraped) == 1  # the first scrape


@pytest.fixture
def broken_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """``GET /api/v1/rules`` fails with a bug (a RuntimeError)."""

    def broken() -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(meta, "rules", broken)


@pytest.mark.usefixtures("broken_rules")
def test_a_failing_route_is_counted_as_a_500(engine: Engine, settings: Settings) -> None:
    app = create_app(settings, engine=engine)
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/api/v1/rules")
        assert r.status_code == 500
        assert r.json()["error"] == "internal_error"
        samples = _samples(client.get("/metrics").text)
    failed = {"method": "GET", "route": "/api/v1/rules", "status": "500"}
    assert _value(samples, "pharaon_http_requests_total", **failed) == 1


@pytest.mark.usefixtures("broken_rules")
def test_a_500_is_logged_once_with_its_traceback_and_the_answer_s_request_id(
    engine: Engine, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings, engine=engine)
    with TestClient(app, raise_server_exceptions=False) as client:
        mine = client.get("/api/v1/rules?email=ana%40example.org")
        given = client.get("/api/v1/rules", headers={"X-Request-Id": "proxy-42"})
        odd = client.get("/api/v1/rules", headers={"X-Request-Id": "a b;c"})
    failures = [r for r in caplog.records if r.name == "pharaon.errors"]
    assert [r.levelname for r in failures] == ["ERROR"] * 3  # once each
    ids = [r.__dict__["request_id"] for r in failures]
    assert ids[1] == "proxy-42"  # the proxy's id, kept
    assert ids[2] != "a b;c"  # not a plain id: one of the server's own
    for answer, request_id, record in zip((mine, given, odd), ids, failures, strict=True):
        assert answer.status_code == 500
        assert answer.headers["X-Request-Id"] == request_id
        assert request_id in answer.json()["detail"]
        line = json.loads(JsonFormatter().format(record))
        assert line["request_id"] == request_id
        assert "RuntimeError: a bug" in line["error"]  # the traceback
        assert "ana@example.org" not in json.dumps(line)  # not the request's values


def test_a_sale_that_cannot_be_counted_is_sold_once(
    engine: Engine,
    settings: Settings,
    load: BlockLoader,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Counter, "inc", full)
    load(100, size=20)
    with TestClient(create_app(settings, engine=engine)) as client:
        player = Player(client, "ana@example.org")
        player.deposit(1_000)
        bought = player.play(100)
        assert bought.status_code == 201
        assert bought.json()["balance_before_cents"] == 1_000
        assert player.balance() == bought.json()["balance_after_cents"]
        assert len(player.get("/plays").json()["plays"]) == 1
    # Counted after the commit: the failure is logged, and the sale stands, once.
    assert "a sale was not counted" in caplog.text


def test_the_access_log_names_the_player_and_the_operator(
    client: TestClient,
    engine: Engine,
    settings: Settings,
    player: Player,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = _operator(engine, settings, "boss@example.org", "admin")
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    assert player.get("/me").status_code == 200
    headers = _log_in(client, "boss@example.org", secret)
    assert client.get("/api/v1/operator/blocks", headers=headers).status_code == 200
    assert client.get("/api/v1/me").status_code == 401
    lines = [record.access for record in caplog.records if record.name == ACCESS_LOGGER]  # type: ignore[attr-defined]
    assert [(line["route"], line["status"]) for line in lines] == [
        ("/api/v1/me", 200),
        ("/api/v1/operator/sessions", 200),
        ("/api/v1/operator/blocks", 200),
        ("/api/v1/me", 401),
    ]
    assert lines[0]["player_id"] == player.player_id
    operator_id = lines[2]["operator_id"]
    assert isinstance(operator_id, int)
    assert "player_id" not in lines[2]
    assert set(lines[3]) == {"method", "route", "status", "duration_ms"}  # nobody let in


def _metrics_folders(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "tmp").glob("pharaon-metrics-*"))


@pytest.fixture
def served(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, str, Path]]:
    """``pharaon serve --workers 2`` over a PostgreSQL database (several workers need one)
    with a block at 1 €; its temporary files under ``tmp_path / "tmp"``."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    url = database_url
    engine = make_engine(url)
    upgrade(engine)
    load_for_sale(engine, make_block(100, size=60))
    engine.dispose()
    log = tmp_path / "serve.log"
    process, base = _serve(url, log, "--no-first-start", "--workers", "2")
    try:
        _wait(process, base, log, 90)
        yield process, base, log
    finally:
        if process.poll() is None:
            _stop(process)


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_served_server_counts_every_worker_and_logs_json(
    served: tuple[Any, str, Path], tmp_path: Path, database_url: str
) -> None:
    process, base, log = served
    workers = _workers(process.pid)
    assert len(workers) == 2
    (folder,) = _metrics_folders(tmp_path)
    clients = [http.client(base_url=base) for _ in range(16)]  # a connection each
    try:
        for client in clients:
            _idle(workers)
            assert client.get("/api/v1/rules").status_code == 200
        held = _connections_by_process(workers, int(base.rsplit(":", 1)[1]))
        assert all(n > 0 for n in held.values()), held  # both workers answered some
    finally:
        for client in clients:
            client.close()
    email = f"ana-{secrets.token_hex(3)}@example.org"
    token = _sign_up(base, email)
    bearer = {"Authorization": f"Bearer {token}"}
    assert http.get(f"{base}/api/v1/me", headers=bearer).status_code == 200
    for n in range(3):
        r = http.post(
            f"{base}/api/v1/plays",
            json={"stake_cents": 100, "mode": "auto"},
            headers={**bearer, "Idempotency-Key": f"buy-{n}"},
        )
        assert r.status_code == 201, r.text
    # Whichever worker answers the scrape, it counts the requests of both.
    for _ in range(4):
        with http.client(base_url=base) as scraper:
            samples = _samples(scraper.get("/metrics").text)
        rules = {"method": "GET", "route": "/api/v1/rules", "status": "200"}
        assert _value(samples, "pharaon_http_requests_total", **rules) == 16
        assert _value(samples, "pharaon_purchases_total", stake_cents="100", mode="auto") == 3
        assert _value(samples, "pharaon_purchase_stakes_cents_total", mode="auto") == 300
        assert _value(samples, "pharaon_db_batch_size_sum", door="sell") == 3
        assert _value(samples, "pharaon_pool_units_sold", price_cents="100") == 3
        assert _value(samples, "pharaon_pool_units_remaining", price_cents="100") == 57
    _stop(process)
    assert process.returncode == 0
    assert not folder.exists()  # the server removed its metrics folder

    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            player_id = connection.execute(
                select(PlayerRow.id).where(PlayerRow.email == email)
            ).scalar_one()
    finally:
        engine.dispose()
    text = log.read_text()
    assert token not in text
    assert "long enough" not in text  # _sign_up's password
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    for line in lines:
        assert set(line) <= {"time", "method", "route", "status", "duration_ms", "player_id"}
        assert {"time", "method", "route", "status", "duration_ms"} <= set(line), line
        assert line["time"].endswith("Z")
        assert datetime.fromisoformat(line["time"]).utcoffset() is not None
        assert line["duration_ms"] >= 0
    bought = [line for line in lines if line["route"] == "/api/v1/plays"]
    assert [(line["method"], line["status"]) for line in bought] == [("POST", 201)] * 3
    assert {line["player_id"] for line in bought} == {player_id}
    read = [line for line in lines if line["route"] == "/api/v1/me"]
    assert [line["player_id"] for line in read] == [player_id]
    assert sum(line["route"] == "/api/v1/rules" for line in lines) == 16
    # uvicorn's own access log is off: no line of its format.
    assert '"GET /api/v1/rules HTTP/1.1" 200' not in text


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_single_worker_server_removes_its_metrics_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals, migrated_sqlite: Path
) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    log = tmp_path / "one.log"
    shutil.copyfile(migrated_sqlite, tmp_path / "one.db")  # a database at the newest schema
    process, base = _serve(f"sqlite:///{tmp_path / 'one.db'}", log, "--no-first-start")
    try:
        _wait(process, base, log, 90)
        assert len(_metrics_folders(tmp_path)) == 1
        samples = _samples(http.get(base + "/metrics").text)
        health = {"method": "GET", "route": "/api/v1/health", "status": "200"}
        assert _value(samples, "pharaon_http_requests_total", **health) >= 1
        process.send_signal(stop)
        process.wait(20)
    finally:
        if process.poll() is None:
            _stop(process)
    # uvicorn hands the signal back once shut down: the folder is removed before the end.
    assert process.returncode in (0, -stop)
    assert _metrics_folders(tmp_path) == []
    assert "Traceback" not in log.read_text()


def test_metrics_are_for_the_monitoring_host_only(settings: Settings, engine: Engine) -> None:
    app = create_app(settings, engine=engine)
    with TestClient(app, client=("203.0.113.9", 50000)) as stranger:
        r = stranger.get("/metrics")
        assert r.status_code == 403
        assert r.json()["error"] == "forbidden"
        assert "pharaon_" not in r.text
    with TestClient(app) as monitoring:  # "testclient", allowed by the test settings
        assert monitoring.get("/metrics").status_code == 200
