"""The framework's floor under a purchase: what a bare FastAPI route costs on the same server
stack (uvicorn, httptools, uvloop, one process), so the purchase's CPU can be read as floor +
ours.

The floor route is a purchase's shape without its work: ``POST /api/v1/plays`` with the same
JSON body parsed into a pydantic model, one async dependency reading the bearer token, and a
fixed JSON answer of a purchase's size (201). The load generator is the purchases' own
(``loadgen.py``: 32 keep-alive clients); the server's CPU is read from /proc as
``bench_purchases.py`` reads it. Compare the figure with "CPU per purchase ... server" printed
by ``bench_purchases.py --only sqlite`` in the same sitting (docs/performance.md).

    python benchmarks/bench_floor.py [--seconds 10] [--windows 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
LOADGEN = HERE / "loadgen.py"
CLIENTS = 32
# A purchase's answer as the server gives it, in size and shape (the receipt's signature a
# fixed string here).
ANSWER = json.dumps(
    {
        "play_id": 123456,
        "created_at": "2026-12-06T03:00:00.123456Z",
        "stake_cents": 100,
        "mode": "auto",
        "serial": 654321,
        "block_id": 1,
        "grids": ["ABCDEFGHIJKLMNOP"] * 4,
        "finished": True,
        "bonus": "ABCDEFGHIJKLMNOP",
        "combinations": [],
        "prize_cents": 0,
        "ticket": "A" * 64,
        "balance_before_cents": 1_000_000,
        "balance_after_cents": 999_900,
        "finished_by_server": False,
        "receipt": {"text": "pharaon/receipt/v1\n" + "x" * 130, "signature": "s" * 88},
    }
).encode()


class PlayIn(BaseModel):
    stake_cents: int
    mode: str


async def bearer(request: Request) -> str:
    return request.headers.get("authorization", "").partition(" ")[2]


def create_app() -> FastAPI:
    """The floor's application (``uvicorn --factory``)."""
    app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})

    @app.post("/api/v1/plays", status_code=201)
    async def buy(body: PlayIn, token: Annotated[str, Depends(bearer)]) -> Response:
        # What a route does with them, at its least: parsed and read.
        if not token or body.stake_cents <= 0:
            return Response(status_code=401)
        return Response(ANSWER, status_code=201, media_type="application/json")

    return app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def _up(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the floor's server exited {server.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the floor's server did not start within 30 s")


def _window(port: int, pid: int, seconds: float) -> tuple[float, float, float]:
    """Requests per second, server CPU µs per request, p99 ms of one window."""
    before = _ticks(pid)
    args = [sys.executable, str(LOADGEN), "--host", "127.0.0.1", "--port", str(port)]
    out = subprocess.run(
        [*args, "--seconds", str(seconds)],
        input="\n".join(f"token{n}" for n in range(CLIENTS)),
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )
    cpu = (_ticks(pid) - before) / os.sysconf("SC_CLK_TCK")
    if out.returncode != 0:
        raise RuntimeError(f"load generator exited {out.returncode}: {out.stderr[-2000:]}")
    result = json.loads(out.stdout)
    if result["errors"] or not result["responses"]:
        raise RuntimeError(f"the floor answered errors: {result['error_samples']}")
    responses = int(result["responses"])
    return responses / float(result["elapsed_s"]), cpu * 1e6 / responses, float(result["p99_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each window")
    parser.add_argument("--windows", type=int, default=3)
    args = parser.parse_args()
    port = _free_port()
    command = [sys.executable, "-m", "uvicorn", "bench_floor:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    command += ["--log-level", "warning", "--loop", "uvloop", "--http", "httptools"]
    server = subprocess.Popen(command, cwd=HERE)
    try:
        _up(port, server)
        print(f"FastAPI floor: 1 process, {CLIENTS} clients, {args.windows} windows of "
              f"{args.seconds:g} s")  # fmt: skip
        rates, cpus = [], []
        for n in range(1, args.windows + 1):
            rate, cpu, p99 = _window(port, server.pid, args.seconds)
            print(f"window {n}: {rate:8.1f} requests/s   server CPU {cpu:5.0f} µs per request   "
                  f"p99 {p99:5.1f} ms")  # fmt: skip
            rates.append(rate)
            cpus.append(cpu)
        print(f"floor, median of the windows: {statistics.median(rates):.1f} requests/s, "
              f"server CPU {statistics.median(cpus):.0f} µs per request (no goal: compare "
              "with a purchase's CPU)")  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
