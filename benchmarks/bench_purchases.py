"""Purchases per second through HTTP with 32 concurrent clients, against pgbench.

PostgreSQL (synchronous_commit on): the real server (uvicorn over the app factory) on a
scratch database, 32 concurrent clients buying units for a window of time, then
``pgbench -b tpcb-like -c 32`` on another scratch database for as long; in rounds, so that each
ratio compares two neighbouring windows (a shared host's speed drifts by a quarter within a
minute), and the median ratio is the figure. Both start with a warm-up that is not counted, and
before each window PostgreSQL is left to finish what the last one left it (autovacuum, dirty
buffers), so no window pays for another. Both databases are dropped after. SQLite (WAL,
synchronous=FULL): the same purchases, a warm-up then as many windows, the median rate the
figure. Also the RSS of each server worker. The machine is shared: compare the ratio, not the
absolute figures.

The players are signed up with httpx; the purchases come from loadgen.py, a lean keep-alive
HTTP/1.1 client in its own process (pgbench is C: our client must not eat the server's CPU), which
also reports its own CPU per request.

    .venv/bin/python benchmarks/bench_purchases.py [--seconds 10] [--rounds 3] [--warm-up 5]
        [--workers 2] [--only all|postgres|sqlite] [--units 200000] [--page auto|jouer]
        [--runs 8]

``--runs K`` loads each block's sale order in K runs that concurrent sales take from side by
side (``--runs 1``: one run, every sale of a price waits on the one before). ``--only runs``
(also part of ``all``): all purchases at one price, 64 clients, K = 1 against K = 8 (or the
``--runs`` given), two databases served side by side, their windows alternated.

With ``--page MODE`` the buyers play as the web page does: each purchase (in that mode) is
followed, in ``jouer``, by the three grid reads and the one reveal that ends the play (as
game.js asks them), then by ``GET /api/v1/me`` for the balance, and counts once that is
answered. ``--only all`` (what ``make bench`` runs) measures the page's « Jouer » play on
PostgreSQL too, after the purchases, against its own goals (0.4 of tpcb-like, p99 150 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service import approvals, loading
from pharaon.service.clock import utcnow
from pharaon.service.sales_report import sales_report
from pharaon.settings import Settings
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.web.live import LiveServer  # noqa: E402

from loadgen import PAGE_MODES, LoadResult  # noqa: E402  (next to this script, on sys.path when run)

POSTGRES = os.environ.get("PHARAON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CLIENTS = 32
RUNS_CLIENTS = 64  # the one-price comparison of sale runs
UNITS = 200_000  # per price by default, enough for the run; a real block has 1,000,000
REAL_BLOCK = 1_000_000
LOADGEN = Path(__file__).with_name("loadgen.py")
BATCHES = "pharaon_db_batch_size_"  # the server's histogram of its doors' batches
QUIESCE_SECONDS = 60.0  # at most, before a window: autovacuum of what the last one wrote


PG_GOAL = "goal >= 1.0"  # purchases against tpcb-like


@dataclass(frozen=True, slots=True)
class Run:
    """What the command line asked for."""

    seconds: float
    rounds: int
    warm_up: float
    workers: int
    units: int
    page: str | None  # None, or the mode the page plays in
    runs: int  # each block's sale runs

    @property
    def what(self) -> str:
        return f"{self.page} plays as the page makes them" if self.page else "purchases"

    def goals(self, purchases: str) -> tuple[str | None, str | None]:
        """The figure's goal and its p99's (issue 40): ``purchases`` and 50 ms for purchases;
        on PostgreSQL, 0.4 of tpcb-like and 150 ms for the page's « Jouer » play (several
        requests); none for the others."""
        if self.page is None:
            return purchases, "goal <= 50 ms"
        if self.page == "jouer" and purchases == PG_GOAL:
            return "goal >= 0.4", "goal <= 150 ms"
        return None, None


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _prepare(url: str, units: int, sale_runs: int) -> None:
    """Migrate and load one block per price: the regulation's own at 1,000,000 units, else a
    test design of ``units``, its sale order in ``sale_runs`` runs."""
    design = None if units == REAL_BLOCK else test_design(units)
    engine = make_engine(url)
    upgrade(engine)
    for price in (100, 200, 300):
        block = generate_block(price, design=design, block_number=1)
        with make_sessionmaker(engine).begin() as session:
            block_id = loading.load_block(
                session=session,
                block=block,
                allow_test=True,
                actor="bench",
                now=utcnow(),
                sale_runs=sale_runs,
            )
            approvals.verify_and_approve(
                session=session, block_id=block_id, actor="auditor:bench", now=utcnow()
            )
    engine.dispose()


async def _player(http: httpx.AsyncClient, n: int) -> str:
    """Sign up, log in and deposit; the bearer token of a new player who can buy for long."""
    email = f"bench{n}-{secrets.token_hex(3)}@example.org"
    body = {"email": email, "password": "long enough", "birth_date": "1980-01-01"}
    (await http.post("/api/v1/players", json=body)).raise_for_status()
    r = await http.post("/api/v1/sessions", json={"email": email, "password": "long enough"})
    r.raise_for_status()
    token = str(r.json()["token"])
    # The moderators first (weekly deposit and stake ceilings), far above what a run buys.
    moderators = {"daily_cents": None, "weekly_cents": 10**12, "monthly_cents": None,
                  "stake_weekly_cents": 10**12}  # fmt: skip
    bearer = {"Authorization": f"Bearer {token}"}
    (await http.put("/api/v1/me/limits", json=moderators, headers=bearer)).raise_for_status()
    r = await http.post(
        "/api/v1/deposits",
        json={"amount_cents": 100_000_000},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "deposit"},
    )
    r.raise_for_status()
    return token


async def _players(base: str, count: int = CLIENTS) -> list[str]:
    # All at once: argon2 is slow on purpose, and the server has several workers.
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        return list(await asyncio.gather(*(_player(http, n) for n in range(count))))


def _cpu_ticks(pids: list[int], *, reaped: bool = False) -> int:
    """User + system CPU of the processes still alive, in clock ticks; with ``reaped``, also
    what their exited children used (PostgreSQL's postmaster reaps each backend that ends)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
        if reaped:
            ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks


def _postgres_ticks() -> int:
    """CPU of every PostgreSQL server process on this machine, ended backends included."""
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True, check=False)
    return _cpu_ticks([int(p) for p in out.stdout.split()], reaped=True)


def _sale_batches(server: LiveServer) -> tuple[float, float]:
    """(batches, purchases) the sale's door has served so far, all workers together (the
    server's ``pharaon_db_batch_size`` histogram)."""
    text = httpx.get(f"{server.url}/metrics", timeout=30).text
    found = {"count": 0.0, "sum": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("door") == "sell" and sample.name.startswith(BATCHES):
                found[sample.name.removeprefix(BATCHES)] = sample.value
    return found["count"], found["sum"]


def _load(
    server: LiveServer, tokens: list[str], seconds: float, page: str | None
) -> tuple[LoadResult, dict[str, float], tuple[float, float]]:
    """The buyers of ``tokens`` for ``seconds``, driven by loadgen.py in its own process (own
    event loop, own CPU account), so the driver's httpx and event loop cost nothing during the
    window; and the CPU seconds the server's processes and PostgreSQL's used meanwhile.

    Raises RuntimeError unless the database gained a play for each purchase counted (a replayed
    Idempotency-Key also answers 201), give or take each buyer's first purchase, not counted,
    and the requests in flight at the end."""
    plays_before = _plays(server.database_url)
    batches_before = _sale_batches(server)
    before_server = _cpu_ticks(_server_pids(server))
    before_pg = _postgres_ticks()
    url = httpx.URL(server.url)
    args = [sys.executable, str(LOADGEN), "--host", url.host, "--port", str(url.port)]
    args += ["--seconds", str(seconds), *(["--page", page] if page else [])]
    out = subprocess.run(
        args,
        input="\n".join(tokens),
        capture_output=True,
        text=True,
        timeout=seconds + 120,
        check=False,
    )
    after_server = _cpu_ticks(_server_pids(server))
    after_pg = _postgres_ticks()
    batches_after = _sale_batches(server)
    if out.returncode != 0:
        raise RuntimeError(f"load generator exited {out.returncode}: {out.stderr[-2000:]}")
    hz = os.sysconf("SC_CLK_TCK")
    cpu = {
        "server": (after_server - before_server) / hz,
        "postgres": (after_pg - before_pg) / hz,
    }
    result = LoadResult.from_json(out.stdout)
    new_plays = _plays(server.database_url) - plays_before
    if not result.purchases <= new_plays <= result.purchases + 2 * len(tokens):
        raise RuntimeError(
            f"{result.purchases} purchases counted but {new_plays} new plays in the database"
        )
    batches = (batches_after[0] - batches_before[0], batches_after[1] - batches_before[1])
    return result, cpu, batches


def _plays(url: str) -> int:
    """Plays sold so far in the database at ``url``, as the operator's sales report counts them."""
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return sum(line.plays for line in sales_report(connection=session.connection()).lines)
    finally:
        engine.dispose()


def _server_pids(server: LiveServer) -> list[int]:
    """The supervisor, then its children: its workers, its writer (and multiprocessing's
    resource tracker)."""
    assert server.process is not None
    children = subprocess.run(
        ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [server.process.pid, *(int(p) for p in children)]


def _rss_mb(server: LiveServer) -> list[float]:
    out = []
    for pid in _server_pids(server):
        status = Path(f"/proc/{pid}/status").read_text()
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        if match:
            out.append(int(match.group(1)) / 1024)
    return out


@contextmanager
def _pgbench_database() -> Iterator[list[str]]:
    """A scratch database initialised by ``pgbench -i -s 1``, dropped after; yields pgbench's
    connection arguments for it."""
    name = f"pharaon_pgbench_{secrets.token_hex(4)}"
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(POSTGRES)
    where = ["-h", url.host or "127.0.0.1", "-p", str(url.port or 5432)]
    where += ["-U", url.username or "postgres", "-d", name]
    try:
        subprocess.run(["pgbench", *where, "-i", "-q", "-s", "1"], check=True, capture_output=True)
        yield where
    finally:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pgbench(where: list[str], seconds: float) -> tuple[float, float]:
    """tpcb-like transactions per second with CLIENTS clients, and PostgreSQL's CPU per
    transaction (µs)."""
    before = _postgres_ticks()
    tpcb = ["-b", "tpcb-like", "-c", str(CLIENTS), "-j", "2", "-T", str(int(seconds))]
    out = subprocess.run(
        ["pgbench", *where, *tpcb],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pg_cpu = (_postgres_ticks() - before) / os.sysconf("SC_CLK_TCK")
    match = re.search(r"tps = ([\d.]+)", out)
    if not match:
        raise RuntimeError(f"pgbench printed no tps: {out}")
    tps = float(match.group(1))
    processed = re.search(r"number of transactions actually processed: (\d+)", out)
    count = int(processed.group(1)) if processed else tps * seconds
    return tps, pg_cpu / count * 1e6


def _quiesce() -> float:
    """Wait until PostgreSQL has no autovacuum worker running and its dirty buffers are written
    (CHECKPOINT), so that a window does not pay for the one before it; the seconds waited."""
    start = time.monotonic()
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        while time.monotonic() - start < QUIESCE_SECONDS:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
            ).fetchone()
            if not row or row[0] == 0:
                break
            time.sleep(0.2)
    return time.monotonic() - start


@contextmanager
def _serving(url: str, log: Path, run: Run) -> Iterator[LiveServer]:
    server = LiveServer(url, log, workers=run.workers)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Steal:
    """The share of the machine's CPU time that the hypervisor gave to other guests while the
    ``with`` block ran (``steal`` in /proc/stat): a shared machine's noise, printed beside the
    figures it disturbs."""

    def __enter__(self) -> Steal:
        self._before = self._read()
        self.share = 0.0
        return self

    def __exit__(self, *_exc: object) -> None:
        after = self._read()
        total = sum(after) - sum(self._before)
        self.share = (after[7] - self._before[7]) / total if total else 0.0

    @staticmethod
    def _read() -> list[int]:
        # cpu user nice system idle iowait irq softirq steal ...
        return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]


def _report(
    label: str, result: LoadResult, cpu: dict[str, float], batches: tuple[float, float]
) -> None:
    print(
        f"  {label:34} {result.rate:8.1f} /s   p50 {result.p50_ms:6.1f} ms   "
        f"p99 {result.p99_ms:6.1f} ms   errors {result.errors}"
    )
    print(
        f"  load generator CPU: {result.cpu_us_per_request:.0f} µs per request "
        f"({result.cpu_s:.2f} s over {result.responses} responses in {result.elapsed_s:.1f} s, "
        f"{result.cpu_s / result.elapsed_s:.0%} of one core), reconnects {result.reconnects}"
    )
    for sample in result.error_samples:
        print(f"    error: {sample}")
    if result.purchases:
        per = ", ".join(
            f"{name} {seconds / result.purchases * 1e6:.0f} µs" for name, seconds in cpu.items()
        )
        print(f"  CPU per purchase (whole run of the load generator): {per}")
    count, served = batches
    if count:
        print(
            f"  the sale's batches: {count:.0f}, {served / count:.1f} purchases each on average "
            "(one transaction a batch, retries and refusals included)"
        )


def _postgres(name: str, tmp: Path, run: Run) -> None:
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        commit = conn.execute("SHOW synchronous_commit").fetchone()
    pg_url = make_url(POSTGRES).set(database=name).render_as_string(hide_password=False)
    setting = commit[0] if commit else "?"
    print(
        f"PostgreSQL synchronous_commit = {setting}; {CLIENTS} clients, "
        f"{run.workers} workers, {run.runs} sale runs per block; {run.rounds} rounds of "
        f"{run.seconds:.0f} s of HTTP {run.what} "
        f"then {run.seconds:.0f} s of pgbench tpcb-like -c {CLIENTS}"
    )
    _prepare(pg_url, run.units, run.runs)
    ratios: list[float] = []
    p99s: list[float] = []
    with _pgbench_database() as pgbench, _serving(pg_url, tmp / "pg.log", run) as server:
        tokens = asyncio.run(_players(server.url))
        _warm_up(server, tokens, run)
        if run.warm_up > 0:
            tps, _pg_us = _pgbench(pgbench, run.warm_up)
            print(f"  pgbench warm-up, not counted: {run.warm_up:.0f} s, {tps:.1f} tps")
        for round_ in range(1, run.rounds + 1):
            waited = _quiesce()
            with Steal() as steal:
                result, cpu, batches = _load(server, tokens, run.seconds, run.page)
            print(f"round {round_} (PostgreSQL quiet after {waited:.1f} s):")
            _report(f"HTTP {run.what}, PostgreSQL:", result, cpu, batches)
            print(f"  CPU stolen by the hypervisor meanwhile: {steal.share:.0%}")
            waited = _quiesce()
            with Steal() as steal:
                tps, pg_us = _pgbench(pgbench, run.seconds)
            print(
                f"  pgbench tpcb-like -c {CLIENTS}:     {tps:8.1f} tps   "
                f"(PostgreSQL CPU {pg_us:.0f} µs each; quiet after {waited:.1f} s; "
                f"CPU stolen meanwhile: {steal.share:.0%})"
            )
            ratios.append(result.rate / tps)
            p99s.append(result.p99_ms)
            print(f"  ratio {run.what} / tpcb-like:  {ratios[-1]:8.3f}")
        rss = _rss_mb(server)
    _summary(
        rss, figure=f"ratio {run.what} / tpcb-like", values=ratios, places=3,
        goals=run.goals(PG_GOAL), each="rounds", p99s=p99s,
    )  # fmt: skip


def _runs_compared(name: str, tmp: Path, run: Run) -> None:
    """One price only (every purchase at 1 €), RUNS_CLIENTS clients: the block's sale order in
    one run (each sale waits on the one before for the run's row) against ``run.runs`` runs
    (taken with SKIP LOCKED), on two databases served side by side, windows alternated."""
    counts = sorted({1, run.runs if run.runs > 1 else 8})
    print(
        f"PostgreSQL, one price, {RUNS_CLIENTS} clients: sale runs per block "
        f"{' against '.join(map(str, counts))}; {run.rounds} rounds of {run.seconds:.0f} s each"
    )
    urls: dict[int, str] = {}
    with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
        for k in counts:
            conn.execute(f'CREATE DATABASE "{name}_k{k}"')
            urls[k] = (
                make_url(POSTGRES)
                .set(database=f"{name}_k{k}")
                .render_as_string(hide_password=False)
            )
    rates: dict[int, list[float]] = {k: [] for k in counts}
    p99s: dict[int, list[float]] = {k: [] for k in counts}
    try:
        for k, url in urls.items():
            _prepare(url, run.units, k)
        with ExitStack() as stack:
            servers = {
                k: stack.enter_context(_serving(url, tmp / f"k{k}.log", run))
                for k, url in urls.items()
            }
            tokens = {k: asyncio.run(_players(s.url, RUNS_CLIENTS)) for k, s in servers.items()}
            for k, server in servers.items():
                _warm_up(server, tokens[k], run)
            for round_ in range(1, run.rounds + 1):
                print(f"round {round_}:")
                for k, server in servers.items():
                    _quiesce()
                    result, cpu, batches = _load(server, tokens[k], run.seconds, None)
                    _report(f"K = {k} sale runs:", result, cpu, batches)
                    rates[k].append(result.rate)
                    p99s[k].append(result.p99_ms)
    finally:
        with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
            for k in counts:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}_k{k}" WITH (FORCE)')
    for k in counts:
        print(
            f"K = {k}: {statistics.median(rates[k]):8.1f} purchases/s, p99 "
            f"{statistics.median(p99s[k]):6.1f} ms (medians of {run.rounds} rounds)"
        )
    low, high = counts[0], counts[-1]
    ratio = statistics.median(rates[high]) / statistics.median(rates[low])
    print(f"one price, K = {high} / K = {low}: {ratio:.2f}x")


def _warm_up(server: LiveServer, tokens: list[str], run: Run) -> None:
    """Purchases not counted: a new database and new connections run slower than a server that
    has been up a while. Then, on PostgreSQL, the tables analyzed, as autovacuum does within
    its first minute: a statement's plan is kept per connection, and the plans made while the
    new database's tables were nearly empty (read them whole, a hash join) would otherwise be
    kept while they grow, until autovacuum's first ANALYZE of each (a minute or so, longer than
    a round); the figures are those of a server in its steady state."""
    if run.warm_up > 0:
        result, _cpu, _batches = _load(server, tokens, run.warm_up, run.page)
        print(f"  warm-up, not counted: {run.warm_up:.0f} s, {result.rate:.1f} /s")
    if make_url(server.database_url).get_backend_name() == "postgresql":
        with psycopg.connect(_libpq(server.database_url), autocommit=True) as conn:
            conn.execute("ANALYZE")
        print("  tables analyzed (what autovacuum does in its first minute)")


def _sqlite(tmp: Path, run: Run) -> None:
    sqlite_url = f"sqlite:///{tmp / 'bench.db'}"
    _prepare(sqlite_url, run.units, run.runs)
    rates: list[float] = []
    p99s: list[float] = []
    print(
        f"SQLite: {run.workers} workers, {run.runs} sale runs per block; "
        f"{run.rounds} windows of {run.seconds:.0f} s"
    )
    with _serving(sqlite_url, tmp / "sqlite.log", run) as server:
        tokens = asyncio.run(_players(server.url))
        _warm_up(server, tokens, run)
        for round_ in range(1, run.rounds + 1):
            with Steal() as steal:
                result, cpu, batches = _load(server, tokens, run.seconds, run.page)
            del cpu["postgres"]
            print(f"window {round_}:")
            _report(f"HTTP {run.what}, SQLite:", result, cpu, batches)
            print(f"  CPU stolen by the hypervisor meanwhile: {steal.share:.0%}")
            rates.append(result.rate)
            p99s.append(result.p99_ms)
        rss = _rss_mb(server)
    _summary(
        rss, figure=f"SQLite {run.what} per second", values=rates, places=1,
        goals=run.goals("goal >= 2000"), each="windows", p99s=p99s,
    )  # fmt: skip


def _summary(
    rss: list[float],
    *,
    figure: str,
    values: list[float],
    places: int,
    goals: tuple[str | None, str | None],
    each: str,
    p99s: list[float],
) -> None:
    """The workers' memory, then the medians of the figure's ``values`` (printed with
    ``places`` decimals) and of the p99s, over the rounds or windows (``each``); with their
    ``goals`` (the figure's, the p99's), where they have one."""
    goal, p99_goal = goals
    print(
        f"server RSS (MB per process, supervisor first): {', '.join(f'{r:.0f}' for r in rss)}"
        "   (goal <= 200 MB per worker)"
    )
    print(
        f"{figure}, median of {len(values)} {each}: {statistics.median(values):.{places}f}   "
        f"({goal or 'no goal'}; {each}: {', '.join(f'{v:.{places}f}' for v in values)})"
    )
    print(
        f"p99 of the purchases, median of the {each}: {statistics.median(p99s):.1f} ms   "
        f"({p99_goal or 'no goal'}; {each}: "
        f"{', '.join(f'{p:.1f}' for p in p99s)} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="length of each window")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="windows per database (on PostgreSQL each followed by one of pgbench)",
    )
    parser.add_argument(
        "--warm-up", type=float, default=5, help="seconds of purchases not counted, first"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="server worker processes (beside its writer)"
    )
    parser.add_argument("--only", choices=("all", "postgres", "runs", "sqlite"), default="all")
    parser.add_argument(
        "--units",
        type=int,
        default=UNITS,
        help=f"units per block (test design); {REAL_BLOCK:,} loads the regulation's blocks",
    )
    parser.add_argument("--page", choices=PAGE_MODES, help="play as the page does, in this mode")
    parser.add_argument(
        "--runs", type=int, default=Settings().sale_runs, help="sale runs per block (1 or more)"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.units < 1_000 or args.units > REAL_BLOCK:
        parser.error(f"--units must be between 1,000 and {REAL_BLOCK:,}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run = Run(
        seconds=args.seconds,
        rounds=args.rounds,
        warm_up=args.warm_up,
        workers=args.workers,
        units=args.units,
        page=args.page,
        runs=args.runs,
    )
    tmp = Path(tempfile.mkdtemp(prefix="pharaon-bench-"))
    name = f"pharaon_bench_{secrets.token_hex(4)}"
    try:
        if args.only in ("all", "postgres"):
            _postgres(name, tmp, run)
        if args.only == "all" and run.page is None:
            # The page's « Jouer » play too (a purchase, three grid reads, the reveal that
            # ends it, GET /me), against its own goals: `make bench` prints every goal.
            _postgres(f"{name}_jouer", tmp, replace(run, page="jouer"))
        if args.only in ("all", "runs"):
            _runs_compared(name, tmp, run)
        if args.only in ("all", "sqlite"):
            _sqlite(tmp, run)
    finally:
        if args.only in ("all", "postgres"):
            with psycopg.connect(_libpq(POSTGRES), autocommit=True) as conn:
                for scratch in (name, f"{name}_jouer"):
                    conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
