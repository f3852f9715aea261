"""How a long command shows its progress on stderr: rich's bars on a terminal; otherwise one
line per finished stage (a log or a pipe has no use for bars, nor for rich's time to load)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# progress(stage, done, total), as the block factory and the loader call it.
ProgressCallback = Callable[[str, int, int], None]


@contextmanager
def progress_display() -> Iterator[ProgressCallback]:
    """A ``progress(stage, done, total)`` callback for the ``with`` block."""
    if sys.stderr.isatty():
        with _bars() as bars:
            yield bars
    else:
        yield _Lines(sys.stderr)


def prefixed(progress: ProgressCallback, prefix: str) -> ProgressCallback:
    """``progress`` with its stages named ``prefix + stage`` (one block among several)."""
    return lambda stage, done, total: progress(prefix + stage, done, total)


class _Lines:
    """``stage: done in 0.31 s`` once a stage reaches its total; the time since the previous
    stage finished (the stages of a command follow one another), or since the start."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._last = time.perf_counter()
        self._finished: set[str] = set()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if done >= total and stage not in self._finished:
            now = time.perf_counter()
            self._finished.add(stage)
            self._out.write(f"{stage}: done in {now - self._last:.2f} s\n")
            self._out.flush()
            self._last = now


@contextmanager
def _bars() -> Iterator[ProgressCallback]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    bars = Progress(
        TextColumn("{task.description:32}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f} %"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    tasks: dict[str, TaskID] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bars.add_task(stage, total=max(total, 1))
        bars.update(tasks[stage], completed=done, total=max(total, 1))

    with bars:
        yield update
