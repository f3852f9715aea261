"""Benchmark of a play's proof on a 1,000,000-unit block: ``GET /plays/{id}/proof`` (the path
read from the tree stored at load) against ``GET /plays/{id}`` (one row), through FastAPI's
TestClient, one request at a time; and the block's load with its tree.

    .venv/bin/python benchmarks/bench_proofs.py [--database-url URL] [--requests N]

Without ``--database-url``: a SQLite file in a temporary folder. With a PostgreSQL URL, give an
empty database (the script migrates it and leaves it filled).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from pharaon.pool.generate import generate_block
from pharaon.service import approvals, loading
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from pharaon.web.app import create_app

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

PLAYS = 5


def _times(client: TestClient, paths: list[str], headers: dict[str, str], n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        answer = client.get(paths[i % len(paths)], headers=headers)
        out.append(time.perf_counter() - start)
        if answer.status_code != 200:
            raise SystemExit(f"{paths[i % len(paths)]}: {answer.status_code} {answer.text}")
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'bench.db'}"
        start = time.perf_counter()
        block = generate_block(100)
        print(f"generate a 1,000,000-unit block: {time.perf_counter() - start:.1f} s")
        engine = make_engine(url)
        upgrade(engine)
        start = time.perf_counter()
        with make_sessionmaker(engine).begin() as session:
            block_id = loading.load_block(
                session=session, block=block, allow_test=True, actor="bench", now=utcnow()
            )
        print(f"load it, with its Merkle tree: {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        with make_sessionmaker(engine).begin() as session:
            approvals.verify_and_approve(
                session=session, block_id=block_id, actor="auditor:bench", now=utcnow()
            )
        print(f"verify its stored units and approve it: {time.perf_counter() - start:.1f} s")
        app = create_app(Settings(database_url=url, allow_test_blocks=True), engine=engine)
        with TestClient(app) as client:
            body = {
                "email": "bench@example.org",
                "password": "long enough",
                "birth_date": "1980-01-01",
            }
            client.post("/api/v1/players", json=body)
            login = {"email": body["email"], "password": body["password"]}
            token = client.post("/api/v1/sessions", json=login).json()
            client.cookies.clear()
            headers = {"Authorization": f"Bearer {token['token']}"}
            moderators = {"daily_cents": None, "weekly_cents": 10**12, "monthly_cents": None,
                          "stake_weekly_cents": 10**12}  # fmt: skip
            client.put("/api/v1/me/limits", json=moderators, headers=headers).raise_for_status()
            deposit = {**headers, "Idempotency-Key": "bench"}
            client.post("/api/v1/deposits", json={"amount_cents": 100 * PLAYS}, headers=deposit)
            plays = []
            for _ in range(PLAYS):
                key = {**headers, "Idempotency-Key": secrets.token_hex(8)}
                order = {"stake_cents": 100, "mode": "auto"}
                plays.append(
                    client.post("/api/v1/plays", json=order, headers=key).json()["play_id"]
                )
            for name, suffix in (("GET /plays/{id}/proof", "/proof"), ("GET /plays/{id}", "")):
                paths = [f"/api/v1/plays/{p}{suffix}" for p in plays]
                times = _times(client, paths, headers, args.requests)
                print(
                    f"{name}: median {statistics.median(times) * 1000:.2f} ms, "
                    f"p95 {times[int(0.95 * len(times))] * 1000:.2f} ms over {len(times)}"
                )
        engine.dispose()


if __name__ == "__main__":
    main()
