"""PostgreSQL failing under 16 buyers: its backends terminated, then the whole cluster
restarted, in the middle of purchases. The server answers 503 (the error shape) while the
database is away and recovers by itself; every purchase answered 201 is in the history, none
is charged twice when retried with its key, and the audit is clean.

The cluster is a throwaway one made with ``initdb`` in a temporary folder, so the shared
PostgreSQL stays up (``tests/web/cluster.py``); one for the module: each test makes a database of
its own on it, with a pharaon server over that, and leaves the cluster running and taking
writes."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import Engine

from pharaon.store.engine import make_engine
from pharaon.store.migrate import upgrade
from tests.conftest import load_for_sale, make_block
from tests.web.cluster import Cluster, throwaway_cluster
from tests.web.live import LiveServer, http, wait_until
from tests.web.test_live import SLOW, Buyer, _check_books, _sign_up

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

BUYERS = 16
PURCHASES = 10


def ready_for_the_burst(url: str) -> Engine:
    """An engine on ``url``'s database, migrated, with a block for the burst's purchases."""
    engine = make_engine(url)
    upgrade(engine)
    load_for_sale(engine, make_block(100, size=BUYERS * PURCHASES + 40))
    return engine


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One throwaway cluster for the module's tests (each stops, cuts or demotes it, and leaves
    it running and taking writes: :func:`faulty`)."""
    yield from throwaway_cluster()


@dataclass
class Faulty:
    """A database of the test's own on the cluster, migrated, with a block; a server over it."""

    database: str
    engine: Engine
    live: LiveServer


@pytest.fixture
def faulty(cluster: Cluster, tmp_path: Path) -> Iterator[Faulty]:
    """A migrated database with a block on the cluster, and a server over it; after, the cluster
    running and out of recovery again, whatever the test left."""
    database = f"pharaon_{secrets.token_hex(4)}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    url = cluster.url(database)
    engine = ready_for_the_burst(url)
    live = LiveServer(url, tmp_path / "server.log", workers=2)
    live.start()
    try:
        yield Faulty(database, engine, live)
    finally:
        live.stop()
        engine.dispose()
        _running_primary(cluster)


def _running_primary(cluster: Cluster) -> None:
    """The cluster started if it is stopped, and promoted if it is in recovery."""
    try:
        cluster.run(str(cluster.bin / "pg_ctl"), "status", "-D", str(cluster.data))
    except subprocess.CalledProcessError:  # not running
        cluster.start()
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    if row is not None and row[0]:
        cluster.promote()


@dataclass
class Burst:
    """The burst under way, as the fault sees it: its buyers, and the 503 answers so far."""

    buyers: list[Buyer]
    away: list[dict[str, Any]] = field(default_factory=list)

    def answered(self) -> int:
        """Purchases answered 201 so far."""
        return sum(len(b.answers) for b in self.buyers)

    def wait_for_some(self) -> None:
        """Until each buyer has, on average, one purchase answered: well under way."""
        wait_until(lambda: self.answered() >= BUYERS, f"{BUYERS} purchases answered", SLOW)

    def wait_for_more(self) -> None:
        """Until a purchase more is answered (or all are)."""
        before = self.answered()
        total = BUYERS * PURCHASES
        wait_until(lambda: self.answered() > before or before == total, "a purchase more", SLOW)

    def wait_for_away(self) -> None:
        """Until a buyer has been answered 503 and told to come back."""
        wait_until(lambda: self.away, "a buyer answered 503", SLOW)


def _buy(base: str, buyer: Buyer, key: str, away: list[dict[str, Any]]) -> None:
    """POST the purchase until it is answered 201, always with the same key; the 503 answers
    are kept in ``away``."""
    headers = {"Authorization": f"Bearer {buyer.token}", "Idempotency-Key": key}
    body = {"stake_cents": 100, "mode": "auto"}
    deadline = time.monotonic() + 3 * SLOW
    while time.monotonic() < deadline:
        sent = time.monotonic()
        try:
            r = http.post(f"{base}/api/v1/plays", json=body, headers=headers, timeout=SLOW)
        except httpx.HTTPError:
            buyer.retries += 1
            time.sleep(0.1)
            continue
        if r.status_code == 503:
            away.append(
                {
                    "body": r.json(),
                    "retry_after": r.headers.get("Retry-After"),
                    "at": time.monotonic(),
                    "took": time.monotonic() - sent,
                }
            )
            buyer.retries += 1
            time.sleep(0.1)
            continue
        assert r.status_code == 201, r.text
        buyer.answers[key] = r.json()
        return
    pytest.fail(f"purchase {key} never answered 201")


def _burst(engine: Engine, base: str, fault: Callable[[Burst], None]) -> list[dict[str, Any]]:
    """16 buyers buying 10 units each at ``base``, ``fault`` called once they have started
    (with the :class:`Burst`, to wait on); the 503 answers they met (each with the time it
    came, ``at``, and how long it took)."""
    buyers = [Buyer(f"b{i}-{secrets.token_hex(3)}@example.org") for i in range(BUYERS)]
    with ThreadPoolExecutor(8) as pool:
        tokens = list(pool.map(lambda b: _sign_up(base, b.email), buyers))
    for buyer, token in zip(buyers, tokens, strict=True):
        buyer.token = token
    burst = Burst(buyers)
    away = burst.away
    started = threading.Event()

    def run(buyer: Buyer) -> None:
        for n in range(PURCHASES):
            _buy(base, buyer, f"{buyer.email}-{n}", away)
            started.set()
            time.sleep(0.05)

    with ThreadPoolExecutor(BUYERS) as pool:
        futures = [pool.submit(run, b) for b in buyers]
        assert started.wait(SLOW)
        fault(burst)
        for f in futures:
            f.result()
    assert sum(len(b.answers) for b in buyers) == BUYERS * PURCHASES
    engine.dispose()  # the test's own connections were cut too
    # Retries with the same key replayed: one play per key, charged once (_check_books).
    _check_books(engine, base, buyers)
    for answer in away:
        assert answer["body"] == {
            "error": "unavailable",
            "detail": "the database is unavailable; try again shortly",
        }
        assert answer["retry_after"] is not None
    return away


def test_backends_terminated_mid_burst(cluster: Cluster, faulty: Faulty) -> None:
    killed: list[int] = []

    def terminate(burst: Burst) -> None:
        burst.wait_for_some()
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            for round_ in range(3):
                if round_:  # again once the server has sold on connections made anew
                    burst.wait_for_more()
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (faulty.database,),
                ).fetchall()
                killed.extend(1 for (ok,) in rows if ok)

    _burst(faulty.engine, faulty.live.url, terminate)
    assert killed  # the server's connections were there, and were cut


def test_cluster_restarted_mid_burst(cluster: Cluster, faulty: Faulty) -> None:
    during: list[httpx.Response] = []

    def restart(burst: Burst) -> None:
        burst.wait_for_some()
        cluster.stop()
        # While the database is away: a clear 503, not a 500 nor a hang.
        during.append(
            http.get(f"{faulty.live.url}/api/v1/me", headers={"Authorization": "Bearer x"})
        )
        burst.wait_for_away()  # away until the buyers have met it
        cluster.start()

    away = _burst(faulty.engine, faulty.live.url, restart)
    assert during[0].status_code == 503, during[0].text
    assert during[0].json()["error"] == "unavailable"
    assert away  # some buyers were told to come back, and did


def test_database_read_only_mid_burst(cluster: Cluster, faulty: Faulty) -> None:
    """The database answers but takes no writes for a while (a primary turned standby, in
    recovery): purchases are answered 503 within seconds, and sold again, without a restart of
    the server, once it is promoted."""
    during: list[httpx.Response] = []

    def standby_then_promoted(burst: Burst) -> None:
        burst.wait_for_some()
        cluster.restart_as_standby()
        body = {"stake_cents": 100, "mode": "auto"}
        headers = {"Authorization": "Bearer x", "Idempotency-Key": "k"}
        started = time.monotonic()
        during.append(http.post(f"{faulty.live.url}/api/v1/plays", json=body, headers=headers))
        assert time.monotonic() - started < 5  # answered, not left to hang
        burst.wait_for_away()  # a standby until the buyers have met it
        cluster.promote()

    away = _burst(faulty.engine, faulty.live.url, standby_then_promoted)
    # No session for that token: a read, which a standby answers.
    assert during[0].status_code == 401, during[0].text
    assert away  # the buyers met the standby, and were told to come back
