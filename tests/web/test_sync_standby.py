"""A primary with a synchronous standby, the standby killed in the middle of a burst of
purchases: every COMMIT then waits for a standby that is gone, and PostgreSQL never gives up.
The server does not: after its deadline (``PHARAON_DB_DEADLINE_SECONDS``) no answer waits
for the standby's return, a 503 ``unavailable`` with ``Retry-After`` for the purchases it could
not confirm, the other requests answered meanwhile; once the standby is back, the sales go on
with no restart, and every purchase retried with its key is there once, charged once; the audit
is clean.

Both clusters are throwaway ones made in temporary folders (``tests/web/cluster.py``)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import Engine

from pharaon.store.engine import make_engine
from pharaon.store.migrate import upgrade
from tests.conftest import load_for_sale, make_block
from tests.web.cluster import Cluster, throwaway_standby
from tests.web.live import LiveServer
from tests.web.test_live import SLOW, Buyer, _check_books, _sign_up

pytestmark = [pytest.mark.postgres, pytest.mark.faults, pytest.mark.alone]

DEADLINE = 2.0
BUYERS = 12
PURCHASES = 8
OUTAGE = 4 * DEADLINE  # how long the standby stays dead


@pytest.fixture
def standby(cluster: Cluster) -> Iterator[Cluster]:
    yield from throwaway_standby(cluster, "standby1")


def _synchronous_state(cluster: Cluster) -> str | None:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'"
        ).fetchone()
    return None if row is None else str(row[0])


def _wait_for(what: str, done: object, timeout: float = SLOW) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if done():  # type: ignore[operator]
            return
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout:g} s")


@pytest.fixture
def synchronous(
    cluster: Cluster, standby: Cluster, tmp_path: Path
) -> Iterator[tuple[Engine, LiveServer]]:
    """A migrated database with a block, on a primary whose every COMMIT waits for the
    standby's confirmation; a server over it, with a deadline of :data:`DEADLINE`."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE DATABASE pharaon")
    _wait_for("the standby synchronous", lambda: _synchronous_state(cluster) == "sync")
    url = cluster.url("pharaon")
    engine = make_engine(url)
    upgrade(engine)
    load_for_sale(engine, make_block(100, size=BUYERS * PURCHASES + 40))
    env = {"PHARAON_DB_DEADLINE_SECONDS": str(DEADLINE)}
    live = LiveServer(url, tmp_path / "server.log", workers=2, env=env)
    live.start()
    yield engine, live
    live.stop()
    engine.dispose()


def test_a_synchronous_standby_killed_mid_burst(
    cluster: Cluster, standby: Cluster, synchronous: tuple[Engine, LiveServer]
) -> None:
    engine, live = synchronous
    base = live.url
    buyers = [Buyer(f"b{i}-{secrets.token_hex(3)}@example.org") for i in range(BUYERS)]
    with ThreadPoolExecutor(6) as pool:
        for buyer, token in zip(
            buyers, pool.map(lambda b: _sign_up(base, b.email), buyers), strict=True
        ):
            buyer.token = token
    took: list[float] = []  # every answer's wait
    away: list[tuple[dict[str, str], str | None]] = []  # the 503s: body, Retry-After
    started = threading.Event()

    def buy(buyer: Buyer, key: str) -> None:
        headers = {"Authorization": f"Bearer {buyer.token}", "Idempotency-Key": key}
        until = time.monotonic() + 4 * SLOW
        while time.monotonic() < until:
            sent = time.monotonic()
            r = httpx.post(
                f"{base}/api/v1/plays",
                json={"stake_cents": 100, "mode": "auto"},
                headers=headers,
                timeout=SLOW,
            )
            took.append(time.monotonic() - sent)
            if r.status_code == 503:
                away.append((r.json(), r.headers.get("Retry-After")))
                time.sleep(0.2)
                continue
            assert r.status_code == 201, r.text
            buyer.answers[key] = r.json()
            return
        pytest.fail(f"purchase {key} never answered 201")

    def run(buyer: Buyer) -> None:
        for n in range(PURCHASES):
            buy(buyer, f"{buyer.email}-{n}")
            started.set()
            time.sleep(0.05)

    with ThreadPoolExecutor(BUYERS) as pool:
        futures = [pool.submit(run, b) for b in buyers]
        assert started.wait(SLOW)
        standby.kill()
        _wait_for("a purchase answered 503", lambda: bool(away), timeout=4 * DEADLINE)
        # The other requests are answered meanwhile: a player's reads.
        headers = {"Authorization": f"Bearer {buyers[0].token}"}
        sent = time.monotonic()
        me = httpx.get(f"{base}/api/v1/me", headers=headers, timeout=SLOW)
        assert me.status_code == 200, me.text
        assert time.monotonic() - sent < DEADLINE
        time.sleep(OUTAGE)
        standby.start()  # no server restart: the sales go on by themselves
        for f in futures:
            f.result()
    assert _synchronous_state(cluster) == "sync"  # the burst ended on a synchronous standby
    assert away, "no purchase met the dead standby"
    for body, retry_after in away:
        assert body == {
            "error": "unavailable",
            "detail": "the database is unavailable; try again shortly",
        }
        assert retry_after == "5"
    print(f"{len(took)} answers, {len(away)} of them 503, the longest {max(took):.2f} s")
    # Without the deadline, the purchases sent as the standby died would wait for its return, the
    # whole outage; with it, each answered long before (a bound in deadlines, not a wall-clock
    # figure: the machine may be loaded, the test beside it starting servers).
    assert max(took) < OUTAGE, sorted(took)[-5:]
    assert sum(len(b.answers) for b in buyers) == BUYERS * PURCHASES
    engine.dispose()
    # One play per key, charged once, every unit sold once and in order; the audit clean.
    _check_books(engine, base, buyers)
