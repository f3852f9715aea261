"""Run the server: ``python -m pharaon.web.serve --host H --port P --workers N``.

uvicorn serves the application; with ``--workers N`` its own supervisor runs N worker processes
on one listening socket, restarts a worker that dies and stops them all on SIGTERM or SIGINT.
A worker also dies with its supervisor (``PR_SET_PDEATHSIG``), so a killed server leaves no
process holding the port. Each worker makes its application with :func:`worker_app` (settings
from ``PHARAON_*``).

The workers write their metrics to files in a temporary folder this process makes and removes
(``PROMETHEUS_MULTIPROC_DIR``), so that ``/metrics`` counts them all, and their access log as
JSON lines on stderr (:mod:`pharaon.web.jsonlog`); uvicorn's own access log is off.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import functools
import gc
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pharaon.web.jsonlog import log_config

_PR_SET_PDEATHSIG = 1


class OneSendPerTurn(asyncio.Transport):
    """A connection's transport whose writes of one event-loop turn leave in one send.

    uvicorn writes a response's head and its body separately: two system calls, two TCP
    segments, and often two wake-ups of the client, for one small JSON answer. Here what is
    written during a turn of the loop is joined and written once, at the end of the turn.
    """

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__()
        self._transport = transport
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(bytes(data))

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))


@functools.cache
def _header_timeout() -> float:
    # Read when the first connection comes, whichever comes first: it or the app's creation.
    from pharaon.store.settings import Settings

    return Settings().header_timeout_seconds


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools), each response sent in one piece; a client
    slower than ``PHARAON_HEADER_TIMEOUT_SECONDS`` to send a request's headers (slowloris) is
    disconnected."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(OneSendPerTurn(transport))
        self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._arm_header_timer()  # the next request's headers have as long

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(_header_timeout(), self.transport.close)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


def _die_with_supervisor() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid != os.getppid():
        os._exit(1)  # the supervisor died before the line above: nobody would stop this worker


def worker_app() -> FastAPI:
    """The application of one worker process, the process tuned for serving it."""
    if multiprocessing.parent_process() is not None:  # a worker of uvicorn's supervisor
        _die_with_supervisor()
    # The sales desk's thread gives up the GIL at each round trip and must get it back from the
    # event loop's thread: a shorter interval shortens its lock holds (docs/performance.md).
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
    stopped_by = 0
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    try:
        _run(args)
    except _StopSignal as stop:
        stopped_by = stop.signum
    finally:
        shutil.rmtree(metrics, ignore_errors=True)
    if stopped_by:
        # The signal's own ending (no KeyboardInterrupt traceback), once the folder is gone.
        signal.signal(stopped_by, signal.SIG_DFL)
        signal.raise_signal(stopped_by)


class _StopSignal(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, _frame: FrameType | None) -> None:
    # uvicorn handles SIGINT and SIGTERM while it runs, then raises the signal again once it
    # has put this handler back: the metrics folder is removed before the process ends.
    raise _StopSignal(signum)


def _run(args: argparse.Namespace) -> None:
    # Behind a proxy the scheme (cookies' Secure flag) and client's address come from its
    # X-Forwarded-* headers; without one, that rewriting is left out of every request's path.
    uvicorn.run(
        "pharaon.web.serve:worker_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=HttpProtocol,
        log_config=log_config(LOGGING_CONFIG),
        log_level="warning",
        access_log=False,
        proxy_headers=bool(args.forwarded_allow_ips),
        forwarded_allow_ips=args.forwarded_allow_ips or None,
        timeout_keep_alive=5,
    )


if __name__ == "__main__":
    main()
