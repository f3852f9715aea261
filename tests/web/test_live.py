"""A real server under load: 32 concurrent buyers retrying with their idempotency keys, and a
server killed with SIGKILL in the middle of purchases, then restarted. Afterwards nothing is
lost or doubled and the audit is clean."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select

from pharaon.service.audit import run_audit
from pharaon.service.blocks import sold_units
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Block
from pharaon.web.writer import NAME as WRITER
from tests.conftest import BlockLoader
from tests.web.live import LiveServer, http, set_moderators, wait_until

BUYERS = 32
PURCHASES = 6
SLOW = 60.0  # seconds: generous, the machine is shared
DEPOSIT = 5_000


@pytest.fixture
def server(engine: Engine, database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    # Two workers, their writes served together by the server's writer, on either database.
    live = LiveServer(database_url, tmp_path / "server.log", workers=2)
    live.start()
    yield live
    live.stop()


@dataclass
class Buyer:
    email: str
    token: str = ""
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> 201 body
    sold_out: set[str] = field(default_factory=set)
    retries: int = 0


def _sign_up(base: str, email: str) -> str:
    body = {"email": email, "password": "long enough", "birth_date": "1980-02-29"}
    assert http.post(f"{base}/api/v1/players", json=body, timeout=SLOW).status_code == 201
    login = {"email": email, "password": "long enough"}
    r = http.post(f"{base}/api/v1/sessions", json=login, timeout=SLOW)
    token: str = r.json()["token"]
    set_moderators(base, {"Authorization": f"Bearer {token}"}, timeout=SLOW)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": f"dep-{email}"}
    amount = {"amount_cents": DEPOSIT}
    r = http.post(f"{base}/api/v1/deposits", json=amount, headers=headers, timeout=SLOW)
    assert r.status_code == 201
    return token


def _buy(
    base: str,
    buyer: Buyer,
    key: str,
    *,
    timeout: float,
    deadline: float,
    unavailable: list[int] | None = None,
) -> dict[str, Any] | None:
    """POST the purchase until an answer comes, always with the same key; None if sold out.
    With ``unavailable``, a 503 is counted there and the purchase asked again (same key)."""
    headers = {"Authorization": f"Bearer {buyer.token}", "Idempotency-Key": key}
    body = {"stake_cents": 100, "mode": "auto"}
    while True:
        try:
            r = http.post(f"{base}/api/v1/plays", json=body, headers=headers, timeout=timeout)
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            buyer.retries += 1
            time.sleep(0.2)
            timeout = SLOW  # the retry waits for its answer
            continue
        if r.status_code == 503 and unavailable is not None and time.monotonic() < deadline:
            unavailable.append(1)
            time.sleep(0.1)
            continue
        if r.status_code == 503:
            return None
        assert r.status_code == 201, r.text
        answer: dict[str, Any] = r.json()
        return answer


def _check_books(engine: Engine, base: str, buyers: list[Buyer]) -> None:
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
        sold = sold_units(session.connection())
    assert report.ok, report.failures
    seen: dict[int, set[int]] = {}
    for buyer in buyers:
        headers = {"Authorization": f"Bearer {buyer.token}"}
        plays: list[dict[str, Any]] = []
        before: int | None = None
        while True:
            params: dict[str, Any] = {"limit": 100} | ({"before": before} if before else {})
            page = http.get(
                f"{base}/api/v1/plays", params=params, headers=headers, timeout=SLOW
            ).json()
            plays += page["plays"]
            before = page["next_before"]
            if before is None:
                break
        assert {p["play_id"] for p in plays} == {a["play_id"] for a in buyer.answers.values()}
        me = http.get(f"{base}/api/v1/me", headers=headers, timeout=SLOW).json()
        lots = sum(p["prize_cents"] for p in plays)
        assert me["balance_cents"] == DEPOSIT - 100 * len(plays) + lots
        for p in plays:
            seen.setdefault(p["block_id"], set()).add(p["serial"])
    # Every sold unit was sold once, in order, with no gap.
    for block_id, serials in seen.items():
        assert serials == set(range(1, sold[block_id] + 1))


def test_32_concurrent_buyers_with_retries(
    engine: Engine, load: BlockLoader, server: LiveServer
) -> None:
    first = load(100, size=90, number=1)
    second = load(100, size=90, number=2)  # 180 units for 192 purchases: a sell-out too
    base = server.url
    buyers = [Buyer(f"buyer{i}@example.org") for i in range(BUYERS)]
    with ThreadPoolExecutor(8) as pool:
        for buyer, token in zip(
            buyers, pool.map(lambda b: _sign_up(base, b.email), buyers), strict=True
        ):
            buyer.token = token
    start = threading.Barrier(BUYERS)

    def run(buyer: Buyer) -> None:
        start.wait()
        for n in range(PURCHASES):
            key = f"{buyer.email}-{n}-{secrets.token_hex(4)}"
            # A short first timeout makes some requests give up while the server carries on.
            answer = _buy(base, buyer, key, timeout=0.05, deadline=time.monotonic() + 3 * SLOW)
            if answer is None:
                buyer.sold_out.add(key)
                continue
            buyer.answers[key] = answer
            again = _buy(base, buyer, key, timeout=SLOW, deadline=time.monotonic() + 3 * SLOW)
            assert again == answer  # a retry returns the same play and charges once

    with ThreadPoolExecutor(BUYERS) as pool:
        list(pool.map(run, buyers))
    bought = sum(len(b.answers) for b in buyers)
    assert bought == 180
    assert sum(len(b.sold_out) for b in buyers) == BUYERS * PURCHASES - 180
    with make_sessionmaker(engine)() as session:
        states = dict(session.execute(select(Block.id, Block.state)).all())
    assert states == {first: "sold_out", second: "sold_out"}
    _check_books(engine, base, buyers)


def _writer_of(pid: int) -> int | None:
    """The writer process of the server ``pid``, if it has one now."""
    tasks = Path(f"/proc/{pid}/task")
    for child in (int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()):
        with contextlib.suppress(FileNotFoundError):
            if Path(f"/proc/{child}/comm").read_text().strip() == WRITER:
                return child
    return None


def test_the_writer_killed_in_the_middle_of_purchases(
    engine: Engine, load: BlockLoader, database_url: str, tmp_path: Path
) -> None:
    """SIGKILL to the server's writer while two workers' buyers buy: the purchases waiting on
    it are answered 503 (none hangs), the server starts another writer, the buyers' retries
    with their keys are sold once, and the books hold."""
    load(100, size=400, number=1)
    live = LiveServer(database_url, tmp_path / "writer.log", workers=2)
    live.start()
    try:
        assert live.process is not None
        base, first = live.url, _writer_of(live.process.pid)
        assert first is not None
        buyers = [Buyer(f"writer{i}@example.org") for i in range(8)]
        for buyer in buyers:
            buyer.token = _sign_up(base, buyer.email)
        unavailable: list[int] = []

        def run(buyer: Buyer) -> None:
            for n in range(25):
                key = f"{buyer.email}-{n}"
                until = time.monotonic() + 3 * SLOW
                answer = _buy(
                    base, buyer, key, timeout=SLOW, deadline=until, unavailable=unavailable
                )
                assert answer is not None
                buyer.answers[key] = answer

        with ThreadPoolExecutor(len(buyers)) as pool:
            futures = [pool.submit(run, b) for b in buyers]
            wait_until(lambda: sum(len(b.answers) for b in buyers) >= 40, "40 sold", SLOW)
            os.kill(first, signal.SIGKILL)
            wait_until(
                lambda: _writer_of(live.process.pid) not in (None, first),  # type: ignore[union-attr]
                "another writer",
                SLOW,
            )
            for f in futures:
                f.result()
        assert sum(len(b.answers) for b in buyers) == 200
        assert "the writer (pid" in live.log.read_text()  # its death logged, once
        _check_books(engine, base, buyers)
    finally:
        live.stop()


def test_sigkill_in_the_middle_of_purchases(
    engine: Engine, load: BlockLoader, database_url: str, tmp_path: Path
) -> None:
    load(100, size=400, number=1)
    live = LiveServer(database_url, tmp_path / "crash.log", workers=1)
    live.start()
    try:
        base = live.url
        buyers = [Buyer(f"crash{i}@example.org") for i in range(8)]
        for buyer in buyers:
            buyer.token = _sign_up(base, buyer.email)
        answered = threading.Event()

        def run(buyer: Buyer) -> None:
            for n in range(25):
                key = f"{buyer.email}-{n}"
                answer = _buy(base, buyer, key, timeout=SLOW, deadline=time.monotonic() + 3 * SLOW)
                assert answer is not None
                buyer.answers[key] = answer
                answered.set()

        def sold() -> int:
            return sum(len(b.answers) for b in buyers)

        with ThreadPoolExecutor(len(buyers)) as pool:
            futures = [pool.submit(run, b) for b in buyers]
            assert answered.wait(30)
            wait_until(lambda: sold() >= 40, "40 purchases answered", SLOW)  # well into them
            live.kill()
            killed_after = sold()
            # Down until a buyer has met the dead server (a refused or cut request, retried).
            wait_until(lambda: sum(b.retries for b in buyers) > 0, "a buyer to retry", SLOW)
            live.start()
            for f in futures:
                f.result()
        assert 0 < killed_after < 200
        assert sum(b.retries for b in buyers) > 0  # the kill was felt
        assert sum(len(b.answers) for b in buyers) == 200
        _check_books(engine, base, buyers)
    finally:
        live.stop()
