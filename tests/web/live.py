"""A real server process (uvicorn over the app factory) that tests start, kill and restart."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

HEALTH = "/api/v1/health"
# The moderators a test's player sets before its first deposit (service/limits.py): a weekly
# deposit ceiling and a weekly stake ceiling far above what a test moves.
MODERATORS = {"daily_cents": None, "weekly_cents": 10**9, "monthly_cents": None,
              "stake_weekly_cents": 10**9}  # fmt: skip


def set_moderators(base: str, headers: Mapping[str, str], timeout: float = 30.0) -> None:
    """Set :data:`MODERATORS` for the player of the bearer ``headers`` on the server at
    ``base``."""
    r = httpx.put(f"{base}/api/v1/me/limits", json=MODERATORS, headers=headers, timeout=timeout)
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
                if httpx.get(self.url + HEALTH, timeout=1).status_code in (200, 503):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
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
