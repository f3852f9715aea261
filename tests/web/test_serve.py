"""``pharaon serve`` itself: migrates, (on a first start) loads one block per price, and
becomes the uvicorn server in the same process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.web.live import free_port


def _serve(database_url: str, log: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [sys.executable, "-m", "pharaon", "serve", "--port", str(port)]
    args += ["--database-url", database_url, *extra]
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=out, env=dict(os.environ))
    return process, f"http://127.0.0.1:{port}"


def _wait(process: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(url + "/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no answer in {timeout} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(20)


def test_serve_without_first_start(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    process, url = _serve(database_url, log, "--no-first-start")
    try:
        _wait(process, url, log, 90)
        assert "uvicorn" in Path(f"/proc/{process.pid}/cmdline").read_text()
        assert httpx.get(url + "/api/v1/prizes/remaining?stake_cents=100").json() == []
        r = httpx.post(url + "/api/v1/players", json={"email": "x"})
        assert r.status_code == 422
    finally:
        _stop(process)
    # uvicorn shuts down cleanly, then re-raises the signal it got.
    assert process.returncode in (0, -signal.SIGTERM)


def test_serve_refuses_a_bad_url(tmp_path: Path) -> None:
    process, _ = _serve("mysql://u@h/d", tmp_path / "bad.log")
    assert process.wait(60) == 2
    assert (
        (tmp_path / "bad.log")
        .read_text()
        .endswith("pharaon: error: database must be sqlite or postgresql, got 'mysql'\n")
    )


@pytest.mark.slow
def test_first_start_loads_one_block_per_price(tmp_path: Path) -> None:
    log = tmp_path / "first.log"
    process, url = _serve(f"sqlite:///{tmp_path / 'first.db'}", log)
    try:
        _wait(process, url, log, 600)
        for stake in (100, 200, 300):
            left = httpx.get(url + f"/api/v1/prizes/remaining?stake_cents={stake}").json()
            assert sum(p["remaining"] for p in left) == 255_505
            assert max(p["prize_cents"] for p in left) == 2_500_000 * stake // 100
    finally:
        _stop(process)
