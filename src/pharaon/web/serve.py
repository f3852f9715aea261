"""Run the server: ``python -m pharaon.web.serve --host H --port P --workers N``.

uvicorn serves the application; with ``--workers N`` its own supervisor runs N worker processes
on one listening socket, restarts a worker that dies and stops them all on SIGTERM or SIGINT
(under a service manager, stop the whole group: ``KillMode=control-group``, deploy/). Each
worker makes its application with :func:`worker_app` (settings from ``PHARAON_*``). Slow or
idle clients are the proxy's to cut (HAProxy's ``timeout http-request``, deploy/haproxy.cfg).

The workers write their metrics to files in a temporary folder this process makes and removes
(``PROMETHEUS_MULTIPROC_DIR``), so that ``/metrics`` counts them all, and their logs as JSON
lines on stderr (:mod:`pharaon.web.jsonlog`); uvicorn's own access log is off.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import signal
import sys
import tempfile
from types import FrameType

import uvicorn
from fastapi import FastAPI
from uvicorn.config import LOGGING_CONFIG

from pharaon.settings import Settings
from pharaon.store.engine import processes_refused
from pharaon.web.jsonlog import log_config


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
    url = os.environ.get("PHARAON_DATABASE_URL") or Settings.model_fields["database_url"].default
    refused = processes_refused(str(url), args.workers)
    if refused:
        parser.error(refused)
    # A fresh folder for this server's metrics (what a folder kept from an earlier run holds
    # would be counted again), set before any worker imports prometheus_client.
    metrics = tempfile.mkdtemp(prefix="pharaon-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics
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


if __name__ == "__main__":
    main()
