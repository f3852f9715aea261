"""Purchases per second through HTTP with 32 concurrent clients, against pgbench.

PostgreSQL (synchronous_commit on): the real server (uvicorn over the app factory) on a
scratch database, 32 concurrent clients buying units for a fixed time; then, in the same run,
``pgbench -b tpcb-like -c 32`` on another scratch database; both are dropped after. SQLite
(WAL, synchronous=FULL): the same purchases. Also the RSS of each server worker with three
blocks loaded. The machine is shared: compare the ratio, not the absolute figures.

    .venv/bin/python benchmarks/bench_purchases.py [--seconds 15] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service import loading
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.web.live import LiveServer  # noqa: E402

POSTGRES = os.environ.get("PHARAON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CLIENTS = 32
UNITS = 200_000  # per price, enough for the run; a real block has 1,000,000


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _prepare(url: str) -> None:
    engine = make_engine(url)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        for price in (100, 200, 300):
            block = generate_block(price, design=test_design(UNITS), block_number=1)
            loading.load_block(
                session=session, block=block, allow_test=True, actor="bench", now=utcnow()
            )
    engine.dispose()


async def _client(
    base: str, n: int, until: float, latencies: list[float], errors: list[str]
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        email = f"bench{n}-{secrets.token_hex(3)}@example.org"
        body = {"email": email, "password": "long enough", "birth_date": "1980-01-01"}
        await http.post("/api/v1/players", json=body)
        r = await http.post("/api/v1/sessions", json={"email": email, "password": "long enough"})
        auth = {"Authorization": f"Bearer {r.json()['token']}"}
        r = await http.post(
            "/api/v1/deposits",
            json={"amount_cents": 100_000_000},
            headers={**auth, "Idempotency-Key": "deposit"},
        )
        r.raise_for_status()
        i = 0
        while time.monotonic() < until:
            headers = {**auth, "Idempotency-Key": f"p{i}"}
            start = time.perf_counter()
            r = await http.post(
                "/api/v1/plays", json={"stake_cents": 100, "mode": "auto"}, headers=headers
            )
            if r.status_code == 201:
                latencies.append(time.perf_counter() - start)
            else:
                errors.append(f"{r.status_code} {r.text[:80]}")
            i += 1


def _load(base: str, seconds: float) -> tuple[float, float, float, int]:
    """(purchases/s, p50 ms, p99 ms, errors) of CLIENTS concurrent buyers for ``seconds``."""
    latencies: list[float] = []
    errors: list[str] = []

    async def main() -> float:
        # Sign everyone up first (argon2 is slow on purpose), then measure.
        until = time.monotonic() + 3600
        tasks = [
            asyncio.create_task(_client(base, n, until, latencies, errors)) for n in range(CLIENTS)
        ]
        while len(latencies) + len(errors) < CLIENTS and not any(t.done() for t in tasks):
            await asyncio.sleep(0.05)
        for t in tasks:
            if t.done():
                t.result()
        latencies.clear()
        start = time.monotonic()
        await asyncio.sleep(seconds)
        count = len(latencies)
        elapsed = time.monotonic() - start
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return count / elapsed

    rate = asyncio.run(main())
    ordered = sorted(latencies)
    p50 = ordered[len(ordered) // 2] * 1000 if ordered else float("nan")
    p99 = ordered[int(len(ordered) * 0.99)] * 1000 if ordered else float("nan")
    return rate, p50, p99, len(errors)


def _rss_mb(server: LiveServer) -> list[float]:
    assert server.process is not None
    pids = [server.process.pid]
    children = subprocess.run(
        ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    pids += [int(p) for p in children]
    out = []
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        if match:
            out.append(int(match.group(1)) / 1024)
    return out


def _pgbench(seconds: float) -> float:
    name = f"pharaon_pgbench_{secrets.token_hex(4)}"
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(POSTGRES)
    common = [
        "-h",
        url.host or "127.0.0.1",
        "-p",
        str(url.port or 5432),
        "-U",
        url.username or "postgres",
    ]
    try:
        subprocess.run(
            ["pgbench", *common, "-i", "-q", "-s", "1", name], check=True, capture_output=True
        )
        out = subprocess.run(
            [
                "pgbench",
                *common,
                "-b",
                "tpcb-like",
                "-c",
                str(CLIENTS),
                "-j",
                "2",
                "-T",
                str(int(seconds)),
                name,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    match = re.search(r"tps = ([\d.]+)", out)
    if not match:
        raise RuntimeError(f"pgbench printed no tps: {out}")
    return float(match.group(1))


def _serve_and_load(
    url: str, log: Path, workers: int, seconds: float
) -> tuple[float, float, float, int, list[float]]:
    server = LiveServer(url, log, workers=workers)
    server.start()
    try:
        rate, p50, p99, errors = _load(server.url, seconds)
        rss = _rss_mb(server)
    finally:
        server.stop()
    return rate, p50, p99, errors, rss


def _report(label: str, rate: float, p50: float, p99: float, errors: int) -> None:
    print(f"  {label:34} {rate:8.1f} /s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   errors {errors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pharaon-bench-"))
    name = f"pharaon_bench_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
            commit = conn.execute("SHOW synchronous_commit").fetchone()
        pg_url = make_url(POSTGRES).set(database=name).render_as_string(hide_password=False)
        setting = commit[0] if commit else "?"
        print(
            f"PostgreSQL synchronous_commit = {setting}; {CLIENTS} clients, "
            f"{args.workers} workers, {args.seconds:.0f} s"
        )
        _prepare(pg_url)
        rate, p50, p99, errors, rss = _serve_and_load(
            pg_url, tmp / "pg.log", args.workers, args.seconds
        )
        _report("HTTP purchases, PostgreSQL:", rate, p50, p99, errors)
        print(
            f"  server RSS (MB per process, supervisor first): {', '.join(f'{r:.0f}' for r in rss)}"
        )
        tps = _pgbench(args.seconds)
        print(f"  pgbench tpcb-like -c {CLIENTS}:     {tps:8.1f} tps")
        print(f"  ratio purchases / tpcb-like:  {rate / tps:8.3f}   (goal >= 1.0)")
        sqlite_url = f"sqlite:///{tmp / 'bench.db'}"
        _prepare(sqlite_url)
        rate, p50, p99, errors, rss = _serve_and_load(
            sqlite_url, tmp / "sqlite.log", 1, args.seconds
        )
        _report("HTTP purchases, SQLite (1 worker):", rate, p50, p99, errors)
        print("  (goals: SQLite >= 1000 /s; p99 <= 50 ms)")
        print(f"  server RSS (MB): {', '.join(f'{r:.0f}' for r in rss)}")
    finally:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
