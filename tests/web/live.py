"""A real server process (uvicorn over the app factory) that tests start, kill and restart;
the plain HTTP requests they send it, and their waits on a condition."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

HEALTH = "/api/v1/health"


class _PlainHTTP:
    """``httpx.get``, ``post`` and ``put``, each request on a client of its own as those make
    (a new connection, no cookie kept), for the servers the tests start, which speak plain
    HTTP. Each new httpx client otherwise loads the system's certificates for a TLS it never
    uses here: ~25 ms of CPU a request, which a burst of hundreds pays on the cores its server
    needs. One TLS context, made once, serves them all."""

    _tls = ssl.create_default_context()

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(url, verify=self._tls, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return httpx.post(url, verify=self._tls, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return httpx.put(url, verify=self._tls, **kwargs)

    def client(self, **kwargs: Any) -> httpx.Client:
        """A client that keeps its connections (``httpx.Client``), with the same TLS context."""
        return httpx.Client(verify=self._tls, **kwargs)


http = _PlainHTTP()


def wait_until(done: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Until ``done()`` is true, asked every 10 ms; fails naming ``what`` after ``timeout``
    seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.01)


# The moderators a test's player sets before its first deposit (service/limits.py): a weekly
# deposit ceiling and a weekly stake ceiling far above what a test moves.
MODERATORS = {"daily_cents": None, "weekly_cents": 10**9, "monthly_cents": None,
              "stake_weekly_cents": 10**9}  # fmt: skip


def set_moderators(base: str, headers: Mapping[str, str], timeout: float = 30.0) -> None:
    """Set :data:`MODERATORS` for the player of the bearer ``headers`` on the server at
    ``base``."""
    r = http.put(f"{base}/api/v1/me/limits", json=MODERATORS, headers=headers, timeout=timeout)
    assert r.status_code == 200, r.text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """The server process on a free port, as ``pharaon serve`` runs it once the database is
    migrated (it replaces itself by the same command)."""

    def __init__(
        self,
        database_url: str,
        log: Path,
        *,
        workers: int = 1,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.args = list(args)  # more options of pharaon.web.serve
        self.env = dict(env or {})  # more PHARAON_* settings
        self.port = free_port()
        self.log = log
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        env = {**os.environ, **self.env, "PHARAON_DATABASE_URL": self.database_url}
        args = [sys.executable, "-m", "pharaon.web.serve"]
        args += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers)]
        args += self.args
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                # 503: the server is up and says its database is away (the fault tests).
                if http.get(self.url + HEALTH, timeout=1).status_code in (200, 503):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not start: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flushing, no goodbye (the workers die with the supervisor)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
