"""Where the test suite's CPU goes: on 2 cores the suite is bound by its CPU, not by waits, so
its wall time cannot fall below the machine's busy core-seconds over the cores.

    .venv/bin/python benchmarks/suite_cpu.py [pytest's arguments]

runs pytest (by default the first run of ``make test``: ``-n <cores + 1> --dist worksteal
-m "not alone"``) with this file as a plugin in every process, and prints the wall time, the
machine's busy core-seconds (``/proc/stat``) split into the tests' own processes, the
subprocesses they waited for (servers, commands, Chromium), PostgreSQL's backends (the local
postmaster's reaped children) and the rest (each process's start and collection, xdist), then
the CPU per folder and the tests that cost most. A subprocess is counted for the test during
which it was reaped: Chromium, kept for a session, counts for the last browser test of its
process. Compare figures of one sitting only.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

OUT = "SUITE_CPU_OUT"
"""The folder each process of the run writes its tests' records to (one JSON line a test)."""
POSTGRES = os.environ.get("PHARAON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
ROOT = Path(__file__).resolve().parents[1]
SHOWN = 15


@dataclass(frozen=True)
class Cost:
    """One test's CPU seconds: its process's own, and that of the subprocesses it reaped."""

    test: str
    own: float
    children: float
    wall: float

    @property
    def cpu(self) -> float:
        return self.own + self.children


def _cpu_now() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """The plugin: each test's CPU (set-up, call and tear-down), written as it ends."""
    folder = os.environ.get(OUT)
    own, children, started = *_cpu_now(), time.monotonic()
    yield
    if folder is None:
        return
    own_after, children_after = _cpu_now()
    record = {
        "test": item.nodeid,
        "own": own_after - own,
        "children": children_after - children,
        "wall": time.monotonic() - started,
    }
    with (Path(folder) / f"{os.getpid()}.jsonl").open("a") as out:
        out.write(json.dumps(record) + "\n")


def read_costs(folder: Path) -> list[Cost]:
    """Every test's record written under ``folder`` by the run's processes."""
    return [
        Cost(**json.loads(line))
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def by_folder(costs: Iterable[Cost], depth: int = 2) -> dict[str, float]:
    """CPU seconds per test folder (``tests/web``: ``depth`` parts of the path), most first."""
    out: dict[str, float] = {}
    for cost in costs:
        path = cost.test.split("::")[0]
        name = "/".join(path.split("/")[:depth])
        out[name] = out.get(name, 0.0) + cost.cpu
    return dict(sorted(out.items(), key=lambda item: -item[1]))


def busy_jiffies() -> int:
    """The machine's busy time since boot, in clock ticks (every field of /proc/stat's cpu line
    but idle and iowait)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def _ticks(pid: int, reaped: bool) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = int(stat[11]) + int(stat[12])  # utime, stime
    return own + (int(stat[13]) + int(stat[14]) if reaped else 0)  # cutime, cstime


def postgres_ticks() -> int | None:
    """The local PostgreSQL's CPU so far in clock ticks (its postmaster's reaped backends and
    its live processes), or None where it cannot be read (another machine, no rights)."""
    try:
        with psycopg.connect(POSTGRES, connect_timeout=3) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        assert row is not None
        postmaster = int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0])
        live = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
        return _ticks(postmaster, reaped=True) + sum(_live_ticks(int(pid)) for pid in live)
    except (psycopg.Error, OSError, ValueError, AssertionError):
        return None


def _live_ticks(pid: int) -> int:
    """A live child's CPU, or 0 for one that ended since it was listed (its CPU is then in
    its parent's reaped ticks, or soon will be)."""
    try:
        return _ticks(pid, reaped=False)
    except (FileNotFoundError, ProcessLookupError):
        return 0


def label(comm: str, argv: list[str]) -> str:
    """A process's kind from its name and arguments: a Python process by what it runs
    (``python -m pytest``, ``python -m pharaon.web.serve``, ``python -c``, a script), one of
    Chromium's by its ``--type`` (renderer, gpu-process, utility…)."""
    typed = re.search(r"(?:^| )--type=(\S+)", " ".join(argv))  # Chromium's renderers set
    if typed:  # their command line as one string
        return f"{comm} {typed.group(1)}"
    if not comm.startswith("python") or len(argv) < 2:
        return comm
    for flag in ("-m", "-c"):
        if flag in argv[1:-1]:
            return f"python {flag} " + (argv[argv.index(flag) + 1] if flag == "-m" else "…")
    return f"python {Path(argv[1]).name}"


class Processes(threading.Thread):
    """Samples every process's CPU (``/proc/<pid>/stat``) every ``every`` seconds while the run
    goes on: what each kind of process spent, whoever its parent (a server a cluster
    started, Chromium's renderers). A process that lives less than ``every`` is missed."""

    def __init__(self, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.every = every
        self.stopped = threading.Event()
        self.first: dict[tuple[int, int], int] = {}  # (pid, start tick): ticks at first sight
        self.last: dict[tuple[int, int], tuple[str, int]] = {}  # its label and ticks last seen
        self._scan(initial=True)

    def _scan(self, *, initial: bool = False) -> None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                head, _, tail = (entry / "stat").read_text().rpartition(")")
                fields = tail.split()
                key = (int(entry.name), int(fields[19]))  # starttime
                ticks = int(fields[11]) + int(fields[12])
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                if not any(argv):  # a zombie, or a child not yet named: its name as last seen
                    argv = []
                kind = label(head.partition("(")[2], argv)
                if key not in self.last:
                    self.first[key] = ticks if initial else 0
                elif not argv:
                    kind = self.last[key][0]
                self.last[key] = (kind, ticks)  # its name as last seen: after exec, its own
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            self._scan()

    def stop(self) -> dict[str, float]:
        """Core-seconds per kind of process, most first."""
        self.stopped.set()
        self.join()
        self._scan()
        tick = os.sysconf("SC_CLK_TCK")
        spent: dict[str, float] = {}
        for key, (name, ticks) in self.last.items():
            spent[name] = spent.get(name, 0.0) + (ticks - self.first[key]) / tick
        return dict(sorted(spent.items(), key=lambda item: -item[1]))


def report(
    costs: list[Cost], *, wall: float, busy: float, postgres: float | None, cores: int
) -> list[str]:
    """The summary's lines."""
    own = sum(c.own for c in costs)
    children = sum(c.children for c in costs)
    rest = busy - own - children - (postgres or 0.0)
    lines = [
        f"wall {wall:.1f} s; the machine busy {busy:.0f} core-s, {busy / wall:.2f} of its "
        f"{cores} cores on average",
        f"  the tests in their processes: {own:.0f} core-s ({len(costs)} tests)",
        f"  the subprocesses they waited for: {children:.0f} core-s",
        "  PostgreSQL's backends: "
        + ("not read" if postgres is None else f"{postgres:.0f} core-s"),
        f"  the rest (starts, collection, xdist, other processes): {rest:.0f} core-s",
        f"on {cores} cores this run takes at least {busy / cores:.0f} s of wall time; 360 s "
        f"allows {360 * cores} core-s",
        "by folder (the tests and their subprocesses):",
    ]
    lines += [f"  {cpu:7.1f} core-s  {name}" for name, cpu in by_folder(costs).items()]
    lines.append(f"the {SHOWN} tests that cost most (own + subprocesses, wall):")
    for c in sorted(costs, key=lambda c: -c.cpu)[:SHOWN]:
        lines.append(f"  {c.own:6.1f} + {c.children:6.1f} core-s  {c.wall:6.1f} s  {c.test}")
    return lines


def main(argv: list[str]) -> int:
    from bench_block import cpu_model  # next to this script, on sys.path when run

    cores = os.cpu_count() or 1
    args = argv or ["-n", str(cores + 1), "--dist", "worksteal", "-m", "not alone", "-q"]
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as folder:
        env = {
            **os.environ,
            OUT: folder,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "benchmarks"),
                                                         os.environ.get("PYTHONPATH")])),
        }  # fmt: skip
        tick = os.sysconf("SC_CLK_TCK")
        processes = Processes()
        processes.start()
        postgres_before, busy_before, started = postgres_ticks(), busy_jiffies(), time.monotonic()
        code = subprocess.call(
            [sys.executable, "-m", "pytest", "-p", "suite_cpu", *args], cwd=ROOT, env=env
        )
        wall, busy = time.monotonic() - started, (busy_jiffies() - busy_before) / tick
        kinds = processes.stop()
        postgres_after = postgres_ticks()
        postgres: float | None = None
        if postgres_before is not None and postgres_after is not None:
            postgres = (postgres_after - postgres_before) / tick
        costs = read_costs(Path(folder))
    print(f"suite_cpu: pytest {' '.join(args)} (exit {code}); {cpu_model()}, {cores} cores")
    for line in report(costs, wall=wall, busy=busy, postgres=postgres, cores=cores):
        print(line)
    print(f"by kind of process (sampled every {processes.every:g} s: {sum(kinds.values()):.0f} "
          "core-s seen):")  # fmt: skip
    for name, cpu in list(kinds.items())[:SHOWN]:
        print(f"  {cpu:7.1f} core-s  {name}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
