"""benchmarks/suite_cpu.py counts each test's CPU where it is spent: in the test's process, in
the subprocesses it waited for, in PostgreSQL's backends; a test that only waits costs none."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.benchmarks import FOLDER as BENCHMARKS
from tests.benchmarks import benchmark
from tests.conftest import POSTGRES_URL, _libpq
from tests.web.cluster import skip_or_fail

SUITE_CPU = benchmark("suite_cpu")
BURN = """
import subprocess, sys, time

def burn(seconds):
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass

def test_in_its_process():
    burn(0.4)

def test_in_a_subprocess():
    subprocess.run([sys.executable, "-c", "import t; t.burn(0.4)"], check=True, cwd=%r)

def test_waiting():
    time.sleep(0.4)
"""


def test_each_test_s_cpu_is_counted_where_it_is_spent(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BURN % str(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        SUITE_CPU.OUT: str(out),
        "PYTHONPATH": f"{BENCHMARKS}{os.pathsep}{tmp_path}",
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "suite_cpu", "-p", "no:randomly",
         "-p", "no:cacheprovider", "t.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    costs = {cost.test.split("::")[1]: cost for cost in SUITE_CPU.read_costs(out)}
    assert set(costs) == {"test_in_its_process", "test_in_a_subprocess", "test_waiting"}
    own, child, waiting = (
        costs["test_in_its_process"],
        costs["test_in_a_subprocess"],
        costs["test_waiting"],
    )
    assert own.own >= 0.4 > own.children
    assert child.children >= 0.4 > child.own
    assert waiting.wall >= 0.4 > waiting.cpu + 0.2


def test_the_report_splits_the_machine_s_busy_time() -> None:
    cost = SUITE_CPU.Cost
    costs = [
        cost("tests/web/test_a.py::test_one", own=10.0, children=30.0, wall=20.0),
        cost("tests/web/test_a.py::test_two", own=5.0, children=0.0, wall=5.0),
        cost("tests/pool/test_b.py::test_three", own=50.0, children=0.0, wall=60.0),
    ]
    lines = SUITE_CPU.report(costs, wall=100.0, busy=180.0, postgres=20.0, cores=2)
    assert "the machine busy 180 core-s, 1.80 of its 2 cores" in lines[0]
    assert "the tests in their processes: 65 core-s (3 tests)" in lines[1]
    assert "the subprocesses they waited for: 30 core-s" in lines[2]
    assert "PostgreSQL's backends: 20 core-s" in lines[3]
    assert "other processes): 65 core-s" in lines[4]
    assert "at least 90 s of wall time; 360 s allows 720 core-s" in lines[5]
    folders = [line.split()[-1] for line in lines[7:9]]
    assert folders == ["tests/pool", "tests/web"]  # most first: 50 against 45
    assert lines[10].endswith("tests/pool/test_b.py::test_three")
    assert lines[11].endswith("tests/web/test_a.py::test_one")


@pytest.mark.postgres
def test_postgres_backends_cpu_is_read() -> None:
    before = SUITE_CPU.postgres_ticks()
    if before is None:
        skip_or_fail(f"no local PostgreSQL whose processes this machine reads at {POSTGRES_URL}")
    with psycopg.connect(_libpq(POSTGRES_URL)) as conn:
        conn.execute("SELECT count(*) FROM generate_series(1, 3000000)").fetchone()
    # The backend ends with the connection: its CPU counts once its postmaster reaped it.
    deadline = time.monotonic() + 10
    while True:
        after = SUITE_CPU.postgres_ticks()
        assert after is not None
        if after - before >= 0.1 * os.sysconf("SC_CLK_TCK") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert after - before >= 0.1 * os.sysconf("SC_CLK_TCK")  # the count's CPU, a backend's


@pytest.mark.parametrize(
    ("comm", "argv", "kind"),
    [
        ("python", ["/v/bin/python", "-m", "pytest", "-n", "3"], "python -m pytest"),
        ("python3.11", ["python3", "-c", "print(1)"], "python -c …"),
        ("python", ["/v/bin/python", "benchmarks/waits.py", "--pid", "9"], "python waits.py"),
        ("postgres", ["postgres: postgres test 127.0.0.1 idle"], "postgres"),
        ("python", [""], "python"),
        (
            "chromium",
            ["/usr/lib/chromium/chromium", "--type=renderer", "--lang=fr"],
            "chromium renderer",
        ),
        (
            "chromium",
            ["/usr/lib/chromium/chromium --type=gpu-process --no-sandbox"],
            "chromium gpu-process",
        ),
    ],
)
def test_a_process_is_known_by_what_it_runs(comm: str, argv: list[str], kind: str) -> None:
    assert SUITE_CPU.label(comm, argv) == kind


def test_the_processes_cpu_is_seen_whoever_reaps_them() -> None:
    """A process started after the run began counts from its start, though first seen later."""
    processes = SUITE_CPU.Processes(every=1.0)
    processes.start()
    burn = (
        "import time\n"
        "until = time.process_time() + 0.5\n"
        "while time.process_time() < until: pass\n"
        "time.sleep(1.5)"
    )
    subprocess.run([sys.executable, "-c", burn], check=True)
    kinds = processes.stop()
    assert kinds["python -c …"] >= 0.4, kinds
