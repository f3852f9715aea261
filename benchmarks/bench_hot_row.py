"""How long a sale holds its hot rows, and what that caps: one price, on PostgreSQL.

A purchase locks, until its transaction commits, the sale run it takes its units from
(``sale_runs``, one row per run of the block's sale order) and, last, the operator accounts and
the audit chain's head (``audit_head``, one row for every price). Whatever else runs in
parallel, a price cannot sell faster than one batch per run-lock hold per run, nor the whole
game faster than one batch per head-lock hold. This script sells batches of 1, 16 and 64 orders
one after the other (no contention: the hold of the lock itself, WAL fsync at commit
included), times from the statement that locks each row to the end of the commit, and prints
the medians and the caps they set:

    cap per price  = K x batch / run-lock hold      (K runs, each sold in order)
    cap, all sales = batch / head-lock hold

    .venv/bin/python benchmarks/bench_hot_row.py [--batches 200]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import time
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

from pharaon.game.modes import Mode
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service import accounts, approvals, limits, loading, passwords, sales, wallet
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.settings import Settings
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade

POSTGRES = os.environ.get("PHARAON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
BATCHES = (1, 16, 64)
UNITS = 200_000


class Holds:
    """The moments, in the transaction under way, its statements first locked each hot row."""

    def __init__(self, engine: Engine) -> None:
        self.marks: dict[str, float] = {}
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        text = statement.lower()
        if "from sale_runs" in text and "for update" in text:
            self.marks.setdefault("run", time.perf_counter())
        elif "from audit_head" in text and "for update" in text:
            self.marks.setdefault("head", time.perf_counter())


def _players(engine: Engine, count: int) -> list[int]:
    hashed = passwords.hash_password("long enough")
    ids = []
    with make_sessionmaker(engine).begin() as session:
        for n in range(count):
            player_id = accounts.register(
                session=session,
                email=f"hot{n}-{secrets.token_hex(3)}@example.org",
                password_hash=hashed,
                birth_date=utcnow().date().replace(year=1980),
                now=utcnow(),
            ).player_id
            limits.set_limits(  # the moderators first, far above what a run stakes
                session=session,
                player_id=player_id,
                changes={"weekly": 10**12, "stake_weekly": 10**12},
                now=utcnow(),
            )
            wallet.deposit(
                session=session,
                player_id=player_id,
                amount_cents=10_000_000,
                idempotency_key="first",
                now=utcnow(),
            )
            ids.append(player_id)
    return ids


def _measure(engine: Engine, players: list[int], batch: int, batches: int) -> dict[str, float]:
    """Median seconds of each hold (and of the whole transaction) over ``batches`` batches."""
    holds = Holds(engine)
    sessions = make_sessionmaker(engine)
    seen: dict[str, list[float]] = {"run": [], "head": [], "transaction": []}
    for n in range(batches):
        orders = [
            Order(players[(n * batch + i) % len(players)], 100, Mode.AUTO, secrets.token_hex(8))
            for i in range(batch)
        ]
        holds.marks.clear()
        started = time.perf_counter()
        with sessions.begin() as session:
            sales.sell(session=session, requests=orders, now=utcnow())
        ended = time.perf_counter()
        seen["transaction"].append(ended - started)
        for row in ("run", "head"):
            seen[row].append(ended - holds.marks[row])
    event.remove(engine, "before_cursor_execute", holds._seen)
    return {k: statistics.median(v) for k, v in seen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batches", type=int, default=200, help="batches of each size")
    args = parser.parse_args()
    name = f"pharaon_hot_{secrets.token_hex(4)}"
    libpq = make_url(POSTGRES).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        commit = conn.execute("SHOW synchronous_commit").fetchone()
    url = make_url(POSTGRES).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    try:
        upgrade(engine)
        block = generate_block(100, design=test_design(UNITS), block_number=1)
        with make_sessionmaker(engine).begin() as session:
            block_id = loading.load_block(
                session=session, block=block, allow_test=True, actor="bench", now=utcnow()
            )
            approvals.verify_and_approve(
                session=session, block_id=block_id, actor="auditor:bench", now=utcnow()
            )
        players = _players(engine, 64)
        _measure(engine, players, 16, 20)  # warm-up: plans, caches
        k = Settings().sale_runs
        print(
            f"PostgreSQL (synchronous_commit = {commit[0] if commit else '?'}), one price, "
            f"batches sold one after the other, medians of {args.batches}; caps with K = 1 "
            f"and K = {k} runs"
        )
        for batch in BATCHES:
            m = _measure(engine, players, batch, args.batches)
            print(
                f"  batch {batch:3}: transaction {m['transaction'] * 1e3:6.2f} ms, run row held "
                f"{m['run'] * 1e3:6.2f} ms, audit head held {m['head'] * 1e3:6.2f} ms -> cap per "
                f"price {batch / m['run']:8.0f} /s (K = 1), {k * batch / m['run']:8.0f} /s "
                f"(K = {k}); cap of all sales {batch / m['head']:8.0f} /s"
            )
    finally:
        engine.dispose()
        with psycopg.connect(libpq, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
