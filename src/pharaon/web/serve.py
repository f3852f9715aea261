"""Run the server: ``python -m pharaon.web.serve --host H --port P --workers N``.

Each worker process binds the port itself with ``SO_REUSEPORT``, so the kernel spreads new
connections evenly over the workers. (With one shared listening socket, as ``uvicorn
--workers`` does, the first worker to wake takes every connection waiting, and long-lived
keep-alive connections then stay unevenly spread.) The supervisor forwards SIGTERM and SIGINT
to the workers; a worker dies with its supervisor (``PR_SET_PDEATHSIG``); if a worker stops,
the others are stopped too and the supervisor exits with its code. Each worker makes its
application with :func:`pharaon.web.app.create_app_from_env` (settings from ``PHARAON_*``).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import signal
import socket
import subprocess
import sys
import time
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_PR_SET_PDEATHSIG = 1


def _listen(host: str, port: int, *, shared: bool) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


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


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools), each response sent in one piece; a client
    that takes more than ``header_timeout`` seconds to send a request's headers (slowloris)
    is disconnected."""

    header_timeout = 10.0
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
        self._header_timer = self.loop.call_later(self.header_timeout, self.transport.close)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


def run_worker(
    host: str, port: int, *, shared: bool = False, forwarded_allow_ips: str = ""
) -> None:
    """Serve on ``host:port`` in this process until SIGTERM or SIGINT; ``shared``: beside
    other workers on the same port; ``forwarded_allow_ips``: the proxies (comma-separated
    addresses, or ``*``) whose X-Forwarded-Proto and -For are believed."""
    try:
        sock = _listen(host, port, shared=shared)
    except OSError as exc:
        sys.exit(f"pharaon: cannot listen on {host}:{port}: {exc.strerror or exc}")
    # The sales desk's thread holds database locks across its round trips; each time it waits
    # for an answer it gives up the GIL and must get it back from the event loop's thread.
    # A shorter switch interval than the default 5 ms shortens those holds; shorter than 2 ms
    # costs more in switches than it gains (0.5 ms: 8-14 % more CPU per purchase, measured
    # alternating with 2 ms on both databases).
    sys.setswitchinterval(0.002)
    from pharaon.web.app import create_app_from_env  # here: the supervisor stays lean

    app = create_app_from_env()
    # What start-up made (the app, SQLAlchemy's and pydantic's structures) lives as long as
    # the process: frozen, the garbage collector no longer walks it at each full collection,
    # which otherwise shows as pauses in the slowest answers.
    gc.collect()
    gc.freeze()
    # A request leaves few reference cycles, and the default young-generation threshold (700
    # allocations) ran a collection every request or two: collecting less often cut the
    # workers' CPU per purchase by about 7 % (cycles are still collected).
    gc.set_threshold(20_000, 20, 20)
    HttpProtocol.header_timeout = app.state.settings.header_timeout_seconds
    # Behind a proxy the scheme (cookies' Secure flag) and client's address come from its
    # X-Forwarded-* headers; without one, that rewriting is left out of every request's path.
    config = uvicorn.Config(
        app,
        http=HttpProtocol,
        log_level="warning",
        access_log=False,
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=forwarded_allow_ips or None,
        timeout_keep_alive=5,
    )
    uvicorn.Server(config).run(sockets=[sock])


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run_workers(host: str, port: int, workers: int, forwarded_allow_ips: str = "") -> int:
    """Start ``workers`` worker processes and wait; the exit code of the first to stop."""
    argv = [sys.executable, "-m", "pharaon.web.serve", "--host", host, "--port", str(port)]
    argv += ["--forwarded-allow-ips", forwarded_allow_ips]
    children = [
        subprocess.Popen([*argv, "--worker"], preexec_fn=_die_with_parent)  # noqa: PLW1509
        for _ in range(workers)
    ]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code: int | None = None
    while code is None:
        for child in children:
            if child.poll() is not None:
                code = child.returncode
                break
        else:
            time.sleep(0.2)
    forward(signal.SIGTERM, None)
    for child in children:
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    if code in (-signal.SIGTERM, -signal.SIGINT):
        return 0  # stopped as asked
    return 128 - code if code < 0 else code  # killed by a signal: the shell's convention


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pharaon.web.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--forwarded-allow-ips", default="", help="Proxies whose X-Forwarded-* are believed."
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker or args.workers == 1:
        run_worker(
            args.host, args.port, shared=args.worker, forwarded_allow_ips=args.forwarded_allow_ips
        )
        return
    sys.exit(run_workers(args.host, args.port, args.workers, args.forwarded_allow_ips))


if __name__ == "__main__":
    main()
