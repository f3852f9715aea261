"""Run the server: ``python -m pharaon.web.serve --host H --port P --workers N``.

uvicorn serves the application; with ``--workers N`` its own supervisor runs N worker processes
on one listening socket, restarts a worker that dies and stops them all on SIGTERM or SIGINT
(under a service manager, stop the whole group: ``KillMode=control-group``, deploy/). Each
worker makes its application with :func:`worker_app` (settings from ``PHARAON_*``). Slow or
idle clients are the proxy's to cut (HAProxy's ``timeout http-request``, deploy/haproxy.cfg).

Beside the workers this process runs the server's one writer (:class:`WriterProcess`,
:mod:`pharaon.web.writer`): started before them, started again if it dies, stopped after them
(it ignores SIGTERM and SIGINT, so that the workers' last requests are written). The workers
find its socket at ``PHARAON_WRITER_SOCKET``, in a folder only this user may enter.

The workers write their metrics to files in a temporary folder this process makes and removes
(``PROMETHEUS_MULTIPROC_DIR``), so that ``/metrics`` counts them all, and their logs as JSON
lines on stderr (:mod:`pharaon.web.jsonlog`); uvicorn's own access log is off.
"""

from __future__ import annotations

import argparse
import gc
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import suppress
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.config import LOGGING_CONFIG

from pharaon.web.jsonlog import log_config

WRITER_ENV = "PHARAON_WRITER_SOCKET"  # where the workers find the writer
READY = "ready"  # said by the writer once it listens
STOP = "stop"  # said to the writer once the workers are gone
SOCKET = "writer.sock"
SOCKET_PATH_MAX = 107  # bytes in a Unix socket's path (sun_path, its NUL left out)
START_SECONDS = 60.0  # the writer's start, at most (imports and settings: about a second)
STOP_SECONDS = 30.0  # what waits at its doors served, at most, once the workers are gone
_log = logging.getLogger("pharaon.serve")


def worker_app() -> FastAPI:
    """The application of one worker process, the process tuned for serving it."""
    # The database's threads give up the GIL at each round trip and must get it back from the
    # event loop's thread, which keeps it up to this interval (5 ms by default): a purchase
    # batch's dozen round trips, its locks held meanwhile, would wait that long at each.
    sys.setswitchinterval(0.002)
    from pharaon.web.app import create_app_from_env  # here: the supervisor stays lean

    app = create_app_from_env()
    # What start-up made lives as long as the process: frozen, the collector no longer walks it.
    gc.collect()
    gc.freeze()
    # A request leaves few cycles; the default threshold (700) collected every request or two.
    gc.set_threshold(20_000, 20, 20)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pharaon.web.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--forwarded-allow-ips", default="", help="Proxies whose X-Forwarded-* are believed."
    )
    args = parser.parse_args(argv)
    # A fresh folder for this server's metrics (what a folder kept from an earlier run holds
    # would be counted again), set before any worker imports prometheus_client.
    metrics = tempfile.mkdtemp(prefix="pharaon-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics
    sockets = _socket_folder()
    writer = WriterProcess(str(Path(sockets) / SOCKET))
    try:
        writer.start()
    except WriterStartError as exc:
        shutil.rmtree(metrics, ignore_errors=True)
        shutil.rmtree(sockets, ignore_errors=True)
        parser.exit(2, f"{parser.prog}: {exc}\n")
    os.environ[WRITER_ENV] = writer.address
    stopped_by = 0
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    try:
        # Behind a proxy the scheme (cookies' Secure flag) and client's address come from its
        # X-Forwarded-* headers; without one, that rewriting is left out of every request.
        uvicorn.run(
            "pharaon.web.serve:worker_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_config=log_config(LOGGING_CONFIG),
            log_level="warning",
            access_log=False,
            proxy_headers=bool(args.forwarded_allow_ips),
            forwarded_allow_ips=args.forwarded_allow_ips or None,
            timeout_keep_alive=5,
        )
    except _StopSignal as stop:
        stopped_by = stop.signum
    finally:
        writer.stop()
        shutil.rmtree(metrics, ignore_errors=True)
        shutil.rmtree(sockets, ignore_errors=True)
    if stopped_by:
        # The signal's own ending (no KeyboardInterrupt traceback), once the folder is gone.
        signal.signal(stopped_by, signal.SIG_DFL)
        signal.raise_signal(stopped_by)


def _socket_folder() -> str:
    """A new folder for the writer's socket that only this user may enter (mkdtemp's mode
    0700: the lock on the writer's door), in the temporary folder, or in /tmp if the socket's
    path would be too long there."""
    folder = tempfile.mkdtemp(prefix="pharaon-writer-")
    if len(os.fsencode(Path(folder) / SOCKET)) > SOCKET_PATH_MAX:
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="pharaon-writer-", dir="/tmp")
    return folder


class _StopSignal(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    # uvicorn handles SIGINT and SIGTERM while it runs, then raises the signal again once it
    # has put this handler back: the metrics folder is removed before the process ends.
    raise _StopSignal(signum)


class WriterProcess:
    """The server's writer at ``address``: :meth:`start` before the workers (raises
    :class:`WriterStartError` if it cannot start), started again whenever it dies,
    :meth:`stop` after them."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._control: Connection | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a writer started, or stopped, at a time
        # The one thread that waits for the writers to end (two waiting for one child race:
        # the one that loses finds it gone and takes it for alive).
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    def start(self) -> None:
        with self._lock:
            self._spawn()
        self._watcher = threading.Thread(
            target=self._watch, name="pharaon-writer-watch", daemon=True
        )
        self._watcher.start()

    def stop(self) -> None:
        """Tell the writer to serve what waits and stop; killed if it has not within
        :data:`STOP_SECONDS`."""
        self._stopping.set()
        with self._lock:
            process, control, watcher = self._process, self._control, self._watcher
        if process is None or control is None or watcher is None:
            return
        with suppress(OSError):  # already gone
            control.send(STOP)
        # The watcher returns once the writer has ended (it starts no other now): it alone
        # reaps it, so that the pid killed below is still the writer's.
        watcher.join(STOP_SECONDS)
        if watcher.is_alive():
            _log.error(
                "the writer (pid %d) did not stop in %g s: killed", process.pid, STOP_SECONDS
            )
            process.kill()
            watcher.join()
        control.close()

    def _spawn(self) -> None:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_run_writer, args=(self.address, theirs), name="pharaon-writer", daemon=False
        )
        process.start()
        theirs.close()
        said: Any = None
        try:
            if ours.poll(START_SECONDS):
                said = ours.recv()
        except EOFError:
            pass
        if said != READY:
            process.kill()
            process.join()
            ours.close()
            raise WriterStartError(
                said
                if isinstance(said, str)
                else f"the writer did not start (exit code {process.exitcode})"
            )
        self._process, self._control = process, ours

    def _watch(self) -> None:
        """Start another writer whenever the one running dies (until the server stops)."""
        pause = 0.1
        while True:
            process = self._process
            process.join()
            if self._stopping.is_set():
                return
            _log.warning(
                "the writer (pid %d) ended (exit code %s): starting another",
                process.pid,
                process.exitcode,
            )
            while True:
                with self._lock:
                    if self._stopping.is_set():
                        return
                    try:
                        if self._control is not None:
                            self._control.close()
                        self._spawn()
                        break
                    except WriterStartError as exc:
                        _log.error("%s; trying again in %g s", exc, pause)
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
            pause = 0.1


class WriterStartError(Exception):
    """The writer did not start: the one line that says why."""


def _run_writer(address: str, control: Connection) -> None:
    """The writer process's target (its modules loaded there, not in this process)."""
    from pharaon.web.writer import run

    run(address, control)


if __name__ == "__main__":
    main()
