"""Several servers on one PostgreSQL, as a rolling deploy starts them: two ``pharaon serve``
started at the same moment on an empty database both come up, the migrations and the first
start's blocks done once (PostgreSQL advisory locks, ``store/dialect.once_per_deployment``);
then behind HAProxy (``deploy/haproxy.cfg``), which cuts a client that sends its request
slowly, and keeps selling when one server is killed.

The pair is started once for the module (its first start generates three blocks of 1,000,000
units): each test checks what it did, and leaves both running; the server the proxy test kills
is a third one, which joins the deployment for that test."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import POSTGRES_URL, _libpq
from tests.ops.proxy import Proxy
from tests.web.cluster import skip_or_fail
from tests.web.live import HEALTH, free_port, http, wait_until
from tests.web.test_live import SLOW, _sign_up

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

FIRST_START_SECONDS = 900.0  # three blocks of 1,000,000 units generated and loaded, at most


@pytest.fixture(scope="module")
def empty_database() -> Iterator[str]:
    """A new, empty database on the shared PostgreSQL, dropped after the module."""
    name = f"pharaon_ops_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(_libpq(POSTGRES_URL), connect_timeout=5, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        skip_or_fail(f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}".splitlines()[0])
    yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(_libpq(POSTGRES_URL), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Serve:
    """``pharaon serve`` as an operator runs it (migrations, first start, then the server),
    with a keys folder of its own."""

    def __init__(self, url: str, folder: Path) -> None:
        folder.mkdir()
        self.port = free_port()
        self.log = folder / "serve.log"
        self.keys = folder / "keys"
        args = [sys.executable, "-m", "pharaon", "serve", "--port", str(self.port)]
        args += ["--workers", "2"]
        env = {**os.environ, "PHARAON_DATABASE_URL": url, "PHARAON_KEYS_DIR": str(self.keys)}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=log, env=env, start_new_session=True
            )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answers(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()[-3000:]
        try:
            return http.get(self.url + HEALTH, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def wait(self, timeout: float) -> None:
        """Until it answers; fails after ``timeout`` seconds (or if it exits)."""
        wait_until(self.answers, f"{self.url} to answer", timeout)

    def kill(self) -> None:
        """The machine lost: the server and its workers SIGKILLed, and gone (its port refuses
        connections; a worker still dying could take one, then reset it)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        wait_until(self._refuses, f"port {self.port} to refuse connections", 10)

    def _refuses(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
        return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture(scope="module")
def servers(empty_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Serve]]:
    """Two ``pharaon serve`` started together on the empty database, once both answer; for
    the module (no test stops them)."""
    folder = tmp_path_factory.mktemp("servers")
    started = [Serve(empty_database, folder / f"server{n}") for n in (1, 2)]
    try:
        deadline = time.monotonic() + FIRST_START_SECONDS
        while not all(s.answers() for s in started):
            assert time.monotonic() < deadline, "the servers did not come up"
            time.sleep(0.1)
        yield started
    finally:
        with ThreadPoolExecutor(len(started)) as pool:  # both stopping at once
            list(pool.map(Serve.stop, started))


def test_two_servers_started_together(empty_database: str, servers: list[Serve]) -> None:
    assert all(s.answers() for s in servers)  # still up: no test stops them
    logs = [s.log.read_text() for s in servers]
    assert not any("Traceback" in log for log in logs), logs
    # One of them made the first start's keys and blocks; the other found them loaded.
    assert sorted("first start: generating" in log for log in logs) == [False, True]
    assert sorted(s.keys.exists() for s in servers) == [False, True]
    with psycopg.connect(_libpq(empty_database)) as conn:
        prices = [p for (p,) in conn.execute("SELECT price_cents FROM blocks ORDER BY 1")]
        versions = conn.execute("SELECT count(*) FROM alembic_version").fetchone()
    assert prices == [100, 200, 300]
    assert versions == (1,)
    # Both sell, from the same blocks.
    for server in servers:
        token = _sign_up(server.url, f"p-{secrets.token_hex(3)}@example.org")
        r = http.post(
            server.url + "/api/v1/plays",
            json={"stake_cents": 200, "mode": "auto"},
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "k1"},
            timeout=SLOW,
        )
        assert r.status_code == 201, r.text


def test_behind_the_proxy(empty_database: str, servers: list[Serve], tmp_path: Path) -> None:
    # A third server joins the deployment (no first start: the blocks are there) beside the
    # first two; it is the one killed, so the pair stays up for the module.
    joined = Serve(empty_database, tmp_path / "server3")
    with contextlib.ExitStack() as stopped_after:
        stopped_after.callback(joined.stop)
        proxy = Proxy([servers[0].url, joined.url], tmp_path / "haproxy.log")
        joined.wait(FIRST_START_SECONDS)
        assert "first start: generating" not in joined.log.read_text()
        proxy.start()
        stopped_after.callback(proxy.stop)
        # A client that sends its headers byte by byte is cut by the proxy (timeout
        # http-request 10s), answered 408, while the others are served.
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as slow:
            started = time.monotonic()
            slow.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
            for _ in range(40):
                try:
                    slow.sendall(b"X-a: b\r\n")
                except OSError:
                    break
                assert http.get(proxy.url + HEALTH, timeout=SLOW).status_code == 200
                time.sleep(0.5)
            answer = slow.recv(4096)
            cut_after = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert 9 <= cut_after <= 20, cut_after
        # One server killed: the proxy's health check takes it out, the other sells on.
        token = _sign_up(proxy.url, f"p-{secrets.token_hex(3)}@example.org")
        joined.kill()
        headers = {"Authorization": f"Bearer {token}"}
        for n in range(10):
            r = http.post(
                proxy.url + "/api/v1/plays",
                json={"stake_cents": 100, "mode": "auto"},
                headers={**headers, "Idempotency-Key": f"after-{n}"},
                timeout=SLOW,
            )
            assert r.status_code == 201, r.text
