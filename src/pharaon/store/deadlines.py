"""Deadlines on what a connection runs: past its deadline, a statement or a COMMIT is cancelled.

PostgreSQL waits for ever for a lock, or, with synchronous replication, for a standby to
confirm a COMMIT; a client must not. :class:`Watchdog` holds the deadlines of the work in
progress (one thread for all, sleeping until the nearest) and cancels, on the connection
itself, the work still running at its deadline: PostgreSQL's cancel request (the statement
fails with ``query_canceled``; a COMMIT waiting for a standby stops waiting, committed on the
primary alone) or SQLite's ``interrupt``. The caller that set the deadline learns it from
:meth:`Watch.overdue`: its work's outcome must then be taken as unknown, whatever the driver
said (docs/architecture.md, "Every wait has a deadline").
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_log = logging.getLogger(__name__)
# How long a cancel request may take to reach PostgreSQL (it opens a connection of its own).
CANCEL_SECONDS = 5.0


class Watch:
    """One piece of work under a deadline."""

    __slots__ = ("_cancel", "_done", "_lock", "_overdue", "at")

    def __init__(self, at: float, cancel: Callable[[], None]) -> None:
        self.at = at
        self._cancel = cancel
        # Held while the cancel is sent, and to mark the work done: a cancel is never sent
        # once the block is left (the connection may be running someone else's work by then).
        self._lock = threading.Lock()
        self._done = False
        self._overdue = False

    @property
    def overdue(self) -> bool:
        """Whether the deadline passed before the work was done (it was cancelled)."""
        return self._overdue

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._overdue = True
            try:
                self._cancel()
            except Exception as exc:  # the cancel could not be sent: the connection is lost
                _log.warning("a cancel past the deadline could not be sent: %s", exc)

    def _finish(self) -> None:
        with self._lock:
            self._done = True


UNWATCHED = Watch(float("inf"), lambda: None)  # work with no deadline: never overdue


class Watchdog:
    """Cancels the work still running at its deadline; one thread, started at the first watch."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watch(self, dbapi_connection: Any, seconds: float | None) -> Iterator[Watch]:
        """The work done in this block on ``dbapi_connection`` cancelled if still running
        ``seconds`` from now (None: no deadline)."""
        if seconds is None:
            yield UNWATCHED
            return
        watch = Watch(time.monotonic() + seconds, canceller(dbapi_connection))
        with self._wake:
            heapq.heappush(self._heap, (watch.at, next(self._order), watch))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pharaon-deadlines", daemon=True
                )
                self._thread.start()
            elif self._heap[0][2] is watch:
                self._wake.notify()
        try:
            yield watch
        finally:
            watch._finish()  # left in the heap, dropped when its time comes

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._wake.wait(wait)
                _, _, watch = heapq.heappop(self._heap)
            watch._fire()  # outside the heap's lock: a cancel request takes a round trip


def canceller(dbapi_connection: Any) -> Callable[[], None]:
    """How to stop what ``dbapi_connection`` (psycopg's or sqlite3's) is running."""
    cancel_safe = getattr(dbapi_connection, "cancel_safe", None)
    if cancel_safe is not None:  # psycopg
        return lambda: cancel_safe(timeout=CANCEL_SECONDS)
    interrupt: Callable[[], None] = dbapi_connection.interrupt  # sqlite3
    return interrupt
