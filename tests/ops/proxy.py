"""HAProxy started with ``deploy/haproxy.cfg`` as delivered, its addresses given in the
environment as the file asks, in front of the servers the test started."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from tests.web.cluster import skip_or_fail
from tests.web.live import HEALTH, free_port, http

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


class Proxy:
    """``haproxy -f deploy/haproxy.cfg`` on a free port, in front of two servers."""

    def __init__(self, servers: Sequence[str], log: Path) -> None:
        if shutil.which("haproxy") is None:
            skip_or_fail("haproxy not installed (Debian's haproxy package)")
        assert len(servers) == 2, "deploy/haproxy.cfg names two servers"
        self.servers = list(servers)  # their base URLs
        self.port = free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        env = {
            **os.environ,
            "PHARAON_LISTEN": f"127.0.0.1:{self.port}",
            "PHARAON_SERVER_1": self.servers[0].removeprefix("http://"),
            "PHARAON_SERVER_2": self.servers[1].removeprefix("http://"),
            "PHARAON_DEPLOY": str(DEPLOY),
            "PHARAON_STATS": f"127.0.0.1:{free_port()}",
        }
        args = ["haproxy", "-db", "-f", str(DEPLOY / "haproxy.cfg")]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"haproxy exited: {self.log.read_text()[-2000:]}")
            try:
                if http.get(self.url + HEALTH, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"haproxy did not answer: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
