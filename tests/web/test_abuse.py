"""Abuse: credential stuffing across accounts from one address, bodies too large, slow clients
(the proxy cuts them off: tests/ops/test_servers.py), the page's security headers, and Secure
cookies behind an HTTPS proxy."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pharaon.service import logins
from pharaon.service.clock import utcnow
from pharaon.service.errors import LockedOutError, UnauthorizedError
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from pharaon.store.transactions import Transactions
from pharaon.web.guards import MAX_BODY_BYTES
from tests.conftest import BACKENDS, postgres_schema
from tests.service.helpers import PASSWORD, funded_player, log_in
from tests.web.live import LiveServer, http, wait_until

BIRTH = "1990-05-17"


def test_log_ins_are_throttled_per_address_across_accounts(
    engine: Engine, db: Transactions
) -> None:
    now = utcnow()
    funded_player(make_sessionmaker(engine), "real", 0)
    throttle = logins.Throttle(per_account=5, per_address=10, lockout=timedelta(minutes=15))

    def attempt(email: str, password: str, client: str) -> None:
        log_in(db, email, password, client=client, throttle=throttle, now=now)

    # One wrong password each for ten accounts: no account reaches its own five.
    for n in range(10):
        with pytest.raises(UnauthorizedError):
            attempt(f"victim{n}@example.org", "guessed123", "203.0.113.7")
    # That address is now locked out, even with the right password of another account...
    with pytest.raises(LockedOutError):
        attempt("real@example.org", PASSWORD, "203.0.113.7")
    # ...while another address logs in to it.
    attempt("real@example.org", PASSWORD, "198.51.100.2")


def test_the_api_answers_429_to_an_address_locked_out(client: TestClient) -> None:
    statuses = []
    for n in range(21):  # the default: 20 failures from one address
        r = client.post(
            "/api/v1/sessions", json={"email": f"x{n}@example.org", "password": "nope nope"}
        )
        statuses.append(r.status_code)
    assert statuses[:20] == [401] * 20
    assert statuses[20] == 429
    assert (
        client.post(
            "/api/v1/sessions", json={"email": "x0@example.org", "password": "nope nope"}
        ).json()["error"]
        == "locked_out"
    )


def test_a_body_over_the_limit_is_refused_with_413(client: TestClient) -> None:
    big = b'{"email": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'
    r = client.post("/api/v1/players", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json() == {
        "error": "too_large",
        "detail": f"the body must be at most {MAX_BODY_BYTES} bytes",
    }
    assert r.headers["X-Content-Type-Options"] == "nosniff"  # a refusal is guarded too
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_a_chunked_body_over_the_limit_is_refused_with_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        yield b'{"email": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b"a" * 1024
        yield b'"}'

    r = client.post(
        "/api/v1/players", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 413
    assert r.json()["error"] == "too_large"
    assert r.headers["X-Content-Type-Options"] == "nosniff"


def test_a_body_under_the_limit_is_read(client: TestClient) -> None:
    body = {"email": "ok@example.org", "password": "long enough", "birth_date": BIRTH}
    assert client.post("/api/v1/players", json=body).status_code == 201


@pytest.mark.parametrize("path", ["/", "/api/v1/health", "/static/style.css", "/api/v1/nope"])
def test_security_headers_on_the_page_and_the_api(client: TestClient, path: str) -> None:
    r = client.get(path)
    csp = r.headers["Content-Security-Policy"]
    assert "'unsafe-inline'" not in csp
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'self'" in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"


def test_the_api_reference_is_ours_under_the_csp(client: TestClient) -> None:
    r = client.get("/api/docs")
    assert r.status_code == 200
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert 'src="/static/js/apidocs.js"' in r.text
    assert "cdn" not in r.text.lower()
    # Swagger UI's files come from this server, with the same headers.
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f'"/api/docs/assets/{asset}"' in r.text
        served = client.get(f"/api/docs/assets/{asset}")
        assert served.status_code == 200, asset
        assert served.headers["X-Content-Type-Options"] == "nosniff"
        assert len(served.content) > 100_000
    assert client.get("/api/docs/assets/../app.py").status_code == 404


def test_the_page_has_no_inline_script_style_or_handler() -> None:
    static = Path(__file__).parents[2] / "src" / "pharaon" / "web" / "static"
    files = [static / "index.html", static / "apidocs.html", *static.glob("js/*.js")]
    assert len(files) > 2
    for file in files:
        text = file.read_text()
        assert not re.search(r"\sstyle\s*=", text), file
        assert not re.search(r"<\w[^>]*\son[a-z]+\s*=", text), file
        assert not re.search(r"<style", text), file
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", text, re.S)
        assert all("src=" in attrs and not body.strip() for attrs, body in scripts), file


@pytest.fixture(scope="module", params=BACKENDS)
def slow_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """A server that trusts the proxy at 127.0.0.1, on a migrated database of its own; one for
    the module's tests (they read, or add a player of their own)."""
    folder = tmp_path_factory.mktemp("slow_server")
    schemas: Iterator[str] = iter([f"sqlite:///{folder / 'pharaon.db'}"])
    if request.param == "postgresql":
        schemas = postgres_schema(request.getfixturevalue("postgres_database"))
    url = next(schemas)
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    live = LiveServer(url, folder / "server.log", args=["--forwarded-allow-ips", "127.0.0.1"])
    live.start()
    yield live
    live.stop()
    next(schemas, None)  # the PostgreSQL schema dropped


def _unread(port: int) -> int:
    """Bytes sent to the server on ``port`` that it has not read yet, on all its connections
    (their receive queues, /proc/net/tcp)."""
    unread = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
            unread += int(fields[4].split(":")[1], 16)
    return unread


def test_slowloris_does_not_starve_the_server(slow_server: LiveServer) -> None:
    """Connections that never finish their headers cost the server no thread: it answers
    others at once. Cutting them off is the proxy's job (HAProxy's ``timeout http-request``,
    deploy/haproxy.cfg, tested in tests/ops/test_servers.py)."""
    head = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    slow = []
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", slow_server.port))
        s.sendall(head)
        slow.append(s)
    try:
        for _ in range(3):  # a byte at a time, never done
            started = time.monotonic()
            r = http.get(slow_server.url + "/api/v1/health", timeout=5)
            assert r.status_code == 200
            assert time.monotonic() - started < 1.0
            for s in slow:
                s.sendall(b"a")
            # The next byte once the server has read this one on every connection.
            wait_until(lambda: _unread(slow_server.port) == 0, "the server to read them", 10)
    finally:
        for s in slow:
            s.close()


def test_cookies_are_secure_behind_an_https_proxy(slow_server: LiveServer) -> None:
    base = slow_server.url
    body = {"email": "proxy@example.org", "password": "long enough", "birth_date": BIRTH}
    assert http.post(f"{base}/api/v1/players", json=body).status_code == 201
    login = {"email": "proxy@example.org", "password": "long enough"}
    plain = http.post(f"{base}/api/v1/sessions", json=login)
    assert all("secure" not in c.lower() for c in plain.headers.get_list("set-cookie"))
    https = http.post(f"{base}/api/v1/sessions", json=login, headers={"X-Forwarded-Proto": "https"})
    cookies = https.headers.get_list("set-cookie")
    assert len(cookies) == 2
    assert all("; secure" in c.lower() for c in cookies)


def test_only_the_block_upload_takes_a_large_body(client: TestClient) -> None:
    big = b"x" * (MAX_BODY_BYTES + 10)
    r = client.post("/api/v1/operator/blocks", content=big)
    assert r.status_code == 401  # past the size guard: the route asks who the operator is
    assert client.post("/api/v1/operator/sessions", content=big).status_code == 413
