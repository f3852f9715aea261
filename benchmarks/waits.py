"""Where a server's threads spend their wall time: running, waiting for the GIL, for the
database, for the disk, or for work. Run it beside a load (``bench_purchases.py``).

    .venv/bin/python benchmarks/waits.py [--pid PID] [--seconds 10] [--rate 50]
        [--postgres URL --database NAME]

It samples one worker of ``pharaon serve`` (``--pid``, or the busiest worker of the newest
server on this machine) with py-spy (``--native --idle --threads``: the C frames tell a thread
waiting for the GIL, ``take_gil``'s condition wait over a C call's return, from one waiting on
PostgreSQL's socket or on ``fdatasync``), reads each thread's CPU and voluntary context
switches from ``/proc`` over the same window, and with ``--postgres`` samples
``pg_stat_activity`` for the database's client backends every 20 ms (how many are active, idle
in a transaction waiting for the client, waiting on a lock or on the WAL's flush). py-spy pauses
the process at each native sample: the figures are shares of the sampled window, not speeds.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg

THREADS = ("pharaon-sell", "pharaon-reveal", "MainThread", "pharaon-look_up", "pharaon-writes")
"""The threads shown, in this order: the sale's, the reveals', the event loop's, the sessions'
look-up, the lone writes'."""
IO_WAITS = {"poll": "the database's socket", "recv": "the database's socket",
            "send": "the database's socket", "sendto": "the database's socket",
            "recvfrom": "the database's socket", "fdatasync": "the disk (a commit's flush)",
            "fsync": "the disk (a commit's flush)", "pwrite64": "the disk (a commit's flush)",
            "epoll_pwait": "the event loop's poll (no request)",
            "epoll_wait": "the event loop's poll (no request)",
            "write": "a client's socket", "writev": "a client's socket"}  # fmt: skip
WORK_WAITS = ("_queue_SimpleQueue_get_impl", "lock_PyThread_acquire_lock")


def classify(frames: list[str]) -> str:
    """What a thread did in one sample, from its stack (outermost first, C frames included)."""
    names = [frame.split(" (")[0] for frame in frames]
    if any(name in names for name in WORK_WAITS) and not any(
        "psycopg" in frame or "sqlite" in frame for frame in frames[-6:]
    ):
        return "waiting for work"
    if "pthread_cond_timedwait" in names[-4:]:
        return "waiting for the GIL"
    if names[-1] in IO_WAITS:
        return f"waiting on {IO_WAITS[names[-1]]}"
    return "running"


def shares(raw: Path) -> tuple[dict[str, Counter[str]], dict[int, str]]:
    """Per thread name (numbered threads merged), the samples of each activity; and each
    thread's name by its id."""
    found: dict[str, Counter[str]] = collections.defaultdict(Counter)
    names: dict[int, str] = {}
    for line in raw.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        thread = re.match(r"thread \((\d+)\): (.*)", frames[0])
        if thread is None:
            continue
        names[int(thread[1])] = thread[2]
        found[re.sub(r"-\d+$", "", thread[2])][classify(frames[1:])] += int(count)
    return found, names


def newest_worker() -> int:
    """The busiest worker (most threads) of the newest ``pharaon.web.serve`` here."""
    out = subprocess.run(
        ["pgrep", "-n", "-f", "pharaon.web.serve"], capture_output=True, text=True, check=False
    )
    if not out.stdout.strip():
        sys.exit("waits: no pharaon.web.serve runs on this machine (start a load first)")
    supervisor = int(out.stdout.split()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(supervisor)], capture_output=True, text=True, check=False
    ).stdout.split()
    candidates = [supervisor, *map(int, children)]
    return max(candidates, key=lambda pid: len(list(Path(f"/proc/{pid}/task").iterdir())))


def thread_times(pid: int) -> dict[int, tuple[float, int]]:
    """Each thread's CPU seconds and voluntary context switches so far."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[float, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = (task / "status").read_text()
        except OSError:
            continue
        switches = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        out[int(task.name)] = ((int(stat[11]) + int(stat[12])) / tick, switches)
    return out


def backends(url: str, database: str, seconds: float) -> tuple[Counter[tuple[str, ...]], int]:
    """``pg_stat_activity``'s client backends on ``database``, sampled every 20 ms."""
    seen: Counter[tuple[str, ...]] = Counter()
    samples = 0
    with psycopg.connect(url, autocommit=True) as conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rows = conn.execute(
                "SELECT coalesce(state, '-'), coalesce(wait_event_type, '-'),"
                " coalesce(wait_event, '-') FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND datname = %s"
                " AND pid <> pg_backend_pid()",
                (database,),
            ).fetchall()
            seen.update(tuple(row) for row in rows)
            samples += 1
            time.sleep(0.02)
    return seen, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pid", type=int, help="the worker to sample (default: the newest)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=50, help="py-spy's samples per second")
    parser.add_argument("--postgres", help="a URL to read pg_stat_activity through")
    parser.add_argument("--database", help="the database whose backends are sampled")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        sys.exit("waits: py-spy is not installed (pip install py-spy)")
    pid = args.pid or newest_worker()
    sampled: list[tuple[Counter[tuple[str, ...]], int]] = []
    watcher = None
    if args.postgres and args.database:
        watcher = threading.Thread(
            target=lambda: sampled.append(backends(args.postgres, args.database, args.seconds))
        )
        watcher.start()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "stacks.txt"
        before, started = thread_times(pid), time.monotonic()
        subprocess.run(
            [spy, "record", "--native", "--idle", "--threads", "--rate", str(args.rate),
             "--duration", str(round(args.seconds)), "--format", "raw", "--output", str(raw),
             "--pid", str(pid)],
            check=True, capture_output=True,
        )  # fmt: skip
        after, wall = thread_times(pid), time.monotonic() - started
        found, names = shares(raw)
    print(f"worker {pid}, {wall:.1f} s sampled at {args.rate}/s")
    cpu = sum(a[0] - before.get(t, (0.0, 0))[0] for t, a in after.items())
    print(f"  the process's CPU: {100 * cpu / wall:.1f} % of a core")
    for name in THREADS:
        if name not in found:
            continue
        total = sum(found[name].values())
        print(f"  {name} ({total} samples)")
        for what, count in found[name].most_common():
            print(f"    {100 * count / total:5.1f} %  {what}")
    busiest = sorted(
        ((a[0] - before.get(t, (0.0, 0))[0], a[1] - before.get(t, (0.0, 0))[1], t)
         for t, a in after.items()),
        reverse=True,
    )[:4]  # fmt: skip
    for seconds, switches, tid in busiest:
        print(
            f"  thread {names.get(tid, tid)}: CPU {100 * seconds / wall:.1f} % of a core, "
            f"{switches / wall:.0f} voluntary switches/s"
        )
    if watcher is not None:
        watcher.join()
        seen, samples = sampled[0]
        print(f"  PostgreSQL's client backends on {args.database}, mean of {samples} samples:")
        for (state, kind, event), count in seen.most_common(8):
            print(f"    {count / samples:5.2f}  {state} ({kind}: {event})")


if __name__ == "__main__":
    main()
