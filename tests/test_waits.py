"""benchmarks/waits.py tells what a sampled thread did from its innermost C frames."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import benchmark

WAITS = benchmark("waits")
EXECUTE = [
    "execute (psycopg/cursor.py:113)",
    "wait (psycopg/connection.py:495)",
    "0x7f0a0a79af7c (psycopg_binary/_psycopg.so)",
]
GIL = ["0x7f0a0c8a3f16 (libc.so.6)", "pthread_cond_timedwait (libc.so.6)", "0x7f0a (_psycopg.so)"]
FLUSH = ["commit (sqlite3)", "sqlite3WalFrames (_sqlite3.so)", "fdatasync (libc.so.6)"]
QUEUE = [
    "get (queue.py:171)",
    "_queue_SimpleQueue_get_impl (_queue.so)",
    "PyThread_acquire_lock_timed (libpython)",
    "0x7f0a (libc.so.6)",
]
RUNNING = ["sell (pharaon/service/sales.py:196)", "construct_params (sqlalchemy/compiler.py:1)"]


@pytest.mark.parametrize(
    ("frames", "what"),
    [
        ([*EXECUTE, *GIL], "waiting for the GIL"),
        (
            [*EXECUTE, "0x7f0a (_psycopg.so)", "poll (libc.so.6)"],
            "waiting on the database's socket",
        ),
        (FLUSH, "waiting on the disk (a commit's flush)"),
        (QUEUE, "waiting for work"),
        (RUNNING, "running"),
    ],
)
def test_a_sample_is_told_by_its_innermost_frames(frames: list[str], what: str) -> None:
    assert WAITS.classify(["thread_run (libpython3.11.so)", *frames]) == what


def test_numbered_threads_are_counted_together(tmp_path: Path) -> None:
    raw = tmp_path / "stacks.txt"
    raw.write_text(
        ";".join(["thread (7): pharaon-sell-0", *EXECUTE, "poll (libc.so.6)"]) + " 3\n"
        + ";".join(["thread (8): pharaon-sell-1", *RUNNING]) + " 2\n"
    )  # fmt: skip
    found, names = WAITS.shares(raw)
    assert found["pharaon-sell"] == {"waiting on the database's socket": 3, "running": 2}
    assert names == {7: "pharaon-sell-0", 8: "pharaon-sell-1"}
