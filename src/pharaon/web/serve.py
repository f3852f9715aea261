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
import ctypes
import gc
import signal
import socket
import subprocess
import sys
import time
from types import FrameType

import uvicorn

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


def run_worker(host: str, port: int, *, shared: bool = False) -> None:
    """Serve on ``host:port`` in this process until SIGTERM or SIGINT; ``shared``: beside
    other workers on the same port."""
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
    # Nothing reads the client's address or scheme (cookies' Secure flag is a setting), so
    # the X-Forwarded-* rewriting is left out of every request's path.
    config = uvicorn.Config(app, log_level="warning", access_log=False, proxy_headers=False)
    uvicorn.Server(config).run(sockets=[sock])


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run_workers(host: str, port: int, workers: int) -> int:
    """Start ``workers`` worker processes and wait; the exit code of the first to stop."""
    argv = [sys.executable, "-m", "pharaon.web.serve", "--host", host, "--port", str(port)]
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
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker or args.workers == 1:
        run_worker(args.host, args.port, shared=args.worker)
        return
    sys.exit(run_workers(args.host, args.port, args.workers))


if __name__ == "__main__":
    main()
