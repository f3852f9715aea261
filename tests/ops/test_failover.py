"""The primary lost mid-burst, as an operator deploys pharaon (deploy/): two servers behind
HAProxy (``deploy/haproxy.cfg``) on a pg_auto_failover formation (a primary, its synchronous
standby, the monitor with ``deploy/pg_auto_failover/monitor.sql``'s timings), the servers'
database URL naming both nodes with ``target_session_attrs=read-write``.

16 buyers buy through the proxy, each retrying its purchase with its ``Idempotency-Key`` until
it is answered 201; the primary's PostgreSQL and its keeper are SIGKILLed; the monitor promotes
the standby. While no primary takes writes the buyers are answered 503 ``unavailable`` with
``Retry-After``, at once; after, sales resume without a server restarted; every acknowledged
purchase is on the new primary, none charged twice, and ``pharaon audit`` is clean there."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ops.formation import Formation, throwaway_formation
from tests.ops.proxy import Proxy
from tests.web.live import LiveServer
from tests.web.test_faults_postgres import (
    BUYERS,
    PURCHASES,
    Burst,
    _burst,
    ready_for_the_burst,
)

pytestmark = [pytest.mark.postgres, pytest.mark.faults]


@pytest.fixture
def formation() -> Iterator[Formation]:
    yield from throwaway_formation()


def test_primary_killed_mid_burst(
    formation: Formation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = formation.url()
    engine = ready_for_the_burst(url)
    servers = [LiveServer(url, tmp_path / f"server{n}.log", workers=2) for n in (1, 2)]
    proxy = Proxy([s.url for s in servers], tmp_path / "haproxy.log")
    killed: list[float] = []

    def kill_the_primary(burst: Burst) -> None:
        burst.wait_for_some()
        killed.append(time.monotonic())
        formation.kill("node1")

    try:
        with ThreadPoolExecutor(len(servers)) as pool:  # both at once, as a deploy starts them
            list(pool.map(LiveServer.start, servers))
        proxy.start()
        pids = [s.process.pid for s in servers if s.process is not None]
        away = _burst(engine, proxy.url, kill_the_primary)
        # The same server processes sold before and after: none was restarted.
        assert [s.process.pid for s in servers if s.process and s.process.poll() is None] == pids
    finally:
        proxy.stop()
        with ThreadPoolExecutor(len(servers)) as pool:
            list(pool.map(LiveServer.stop, servers))
        engine.dispose()
    assert formation.states()["node2"][0] in {"wait_primary", "primary"}
    audit = subprocess.run(
        [sys.executable, "-m", "pharaon", "audit", "--database-url", url],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "FAIL" not in audit.stdout
    # Told to come back while no primary took writes, then sold again.
    assert away, "no buyer met the failover"
    assert all(a["retry_after"] for a in away)
    slowest = max(a["took"] for a in away)
    assert slowest < 5, f"a 503 took {slowest:.1f} s: a hang, not an answer"
    first, last = away[0]["at"] - killed[0], away[-1]["at"] - killed[0]
    with capsys.disabled():
        print(
            f"\nfailover: {len(away)} answers 503 from +{first:.1f} s to +{last:.1f} s after "
            f"the primary was killed ({last - first:.1f} s of 503, each in {slowest:.2f} s "
            "at most); "
            f"{BUYERS * PURCHASES} purchases acknowledged, each once; audit clean"
        )
