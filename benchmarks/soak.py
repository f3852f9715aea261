"""Soak: the page's mix for a long run on PostgreSQL; memory and the slowest answers per minute.

32 buyers play as the page does in ``jouer`` (a purchase, the four reveals, then ``/me``:
loadgen.py ``--page jouer``, restarted each minute), while this script reads the history
(``GET /api/v1/plays``) round-robin for them. Each minute it prints the RSS of every server
worker and the p99 of that minute's page purchases and history reads; at the end, whether the
RSS stayed flat (within 10 % of the first minute's) and the audit of the database. Not a test.

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--workers 2] [--units 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from pharaon.service.audit import run_audit
from pharaon.settings import Settings
from pharaon.store.engine import make_engine, make_sessionmaker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
from tests.web.live import LiveServer  # noqa: E402

from bench_purchases import (  # noqa: E402
    CLIENTS,
    POSTGRES,
    UNITS,
    _libpq,
    _load,
    _players,
    _prepare,
    _rss_mb,
)

FLAT = 0.10  # RSS may move this much from the first minute's


class Historian:
    """Reads the buyers' history pages round-robin until stopped; latencies per window."""

    def __init__(self, base: str, tokens: list[str]) -> None:
        self._base = base
        self._tokens = tokens
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def window(self) -> tuple[list[float], int]:
        """The latencies (s) and errors since the last call."""
        with self._lock:
            taken, self.latencies = self.latencies, []
            errors, self.errors = self.errors, 0
        return taken, errors

    def _run(self) -> None:
        with httpx.Client(base_url=self._base, timeout=30) as http:
            n = 0
            while not self._stop.is_set():
                token = self._tokens[n % len(self._tokens)]
                n += 1
                start = time.perf_counter()
                try:
                    r = http.get(
                        "/api/v1/plays",
                        params={"limit": 20},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                elapsed = time.perf_counter() - start
                with self._lock:
                    if ok:
                        self.latencies.append(elapsed)
                    else:
                        self.errors += 1
                time.sleep(0.05)  # the page reads its history now and then, not in a loop


def _p99_ms(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(int(len(ordered) * 0.99), len(ordered) - 1)] * 1000 if ordered else 0.0


def soak(minutes: int, workers: int, units: int) -> bool:
    """Run the soak; True if the RSS stayed flat and the audit is clean."""
    name = f"pharaon_soak_{secrets.token_hex(4)}"
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(POSTGRES).set(database=name).render_as_string(hide_password=False)
    try:
        _prepare(url, units, Settings().sale_runs)
        with tempfile.TemporaryDirectory() as tmp:
            server = LiveServer(url, Path(tmp) / "soak.log", workers=workers)
            server.start()
            try:
                first, last = _minutes(server, minutes, workers)
            finally:
                server.stop()
        engine = make_engine(url)
        with make_sessionmaker(engine)() as session:
            report = run_audit(connection=session.connection())
        engine.dispose()
    finally:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    drift = max(abs(b - a) / a for a, b in zip(first, last, strict=True))
    flat = drift <= FLAT
    print(f"RSS drift of the workers from minute 1 to minute {minutes}: {drift:.1%} "
          f"({'flat' if flat else 'NOT flat'}, limit {FLAT:.0%})")  # fmt: skip
    print("audit: " + ("clean" if report.ok else "FAILED: " + "; ".join(report.failures)))
    return flat and report.ok


def _minutes(server: LiveServer, minutes: int, workers: int) -> tuple[list[float], list[float]]:
    """Each minute's figures; the workers' RSS (MB) after the first and the last minute."""
    tokens = asyncio.run(_players(server.url))
    historian = Historian(server.url, tokens)
    historian.start()
    rss_first: list[float] = []
    rss: list[float] = []
    print(f"PostgreSQL, {CLIENTS} clients playing 'jouer' + history reads, {workers} workers")
    try:
        for minute in range(1, minutes + 1):
            result, _cpu, _batches = _load(server, tokens, 60.0, "jouer")
            reads, read_errors = historian.window()
            rss = _rss_mb(server)[1:] if workers > 1 else _rss_mb(server)
            rss_first = rss_first or rss
            print(
                f"minute {minute:2}: {result.rate:6.1f} page purchases/s, "
                f"p99 {result.p99_ms:7.1f} ms, errors {result.errors}; "
                f"history {len(reads) / 60:5.1f}/s p99 {_p99_ms(reads):6.1f} ms "
                f"errors {read_errors}; RSS MB per worker: " + ", ".join(f"{r:.0f}" for r in rss)
            )
            sys.stdout.flush()
    finally:
        historian.stop()
    return rss_first, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--units", type=int, default=UNITS, help="units per block (per price)")
    args = parser.parse_args()
    if args.minutes < 1:
        parser.error(f"--minutes must be at least 1, got {args.minutes}")
    sys.exit(0 if soak(args.minutes, args.workers, args.units) else 1)


if __name__ == "__main__":
    main()
