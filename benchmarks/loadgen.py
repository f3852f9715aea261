"""A lean HTTP/1.1 load generator for ``bench_purchases.py``: keep-alive purchases, nothing more.

The machine has two cores shared by the server, PostgreSQL and this client, so the client must
cost little CPU per request, as pgbench does: one asyncio stream per buyer on uvloop, the request
bytes encoded once (only the Idempotency-Key changes: a prefix drawn per process, then a count,
so a later run with the same players buys anew rather than replaying), and of the response only
the status line, the framing headers and the body. With ``--page MODE``, each buyer plays as
the page does: the purchase in that mode; in ``jouer`` grids 1 to 3 read one request each
(``GET /api/v1/plays/{id}/grids/{grid}``) and the play ended by one reveal of every grid; then
``GET /api/v1/me`` for the balance. A purchase then counts (and its latency runs)
until that answer.
Run by ``bench_purchases.py`` in its own process:

    python benchmarks/loadgen.py --host 127.0.0.1 --port 8000 --seconds 10
        [--page auto|jouer] < tokens

(one bearer token a line on stdin, one buyer each); prints a JSON ``LoadResult`` on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import secrets
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import uvloop

PATH = "/api/v1/plays"
ME_PATH = "/api/v1/me"
BODY = b'{"stake_cents":100,"mode":"auto"}'
JOUER_BODY = b'{"stake_cents":100,"mode":"jouer"}'
GRIDS = 4
PAGE_MODES = ("auto", "jouer")
ERROR_SAMPLES = 5
_NO_BODY = frozenset({204, 304})


class ProtocolError(RuntimeError):
    """A response this client does not understand; the run stops rather than guess."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What the buyers did during the measured window (warm-up excluded)."""

    purchases: int  # responses 201 (with --page: and every request after it answered 200)
    responses: int  # all responses, 201 or not (with --page: a purchase and what follows, one)
    elapsed_s: float
    p50_ms: float  # latency of the purchases (201 only; with --page, until the /me answer)
    p99_ms: float
    errors: int  # non-201 responses and failed requests
    error_samples: tuple[str, ...]  # the first few, status and body
    reconnects: int  # connections the server closed and the buyers opened again
    cpu_s: float  # user + system CPU of the load generator's process

    @property
    def rate(self) -> float:
        """Purchases per second."""
        return self.purchases / self.elapsed_s

    @property
    def cpu_us_per_request(self) -> float:
        """The client's own CPU per response, in µs."""
        return self.cpu_s / self.responses * 1e6 if self.responses else float("nan")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LoadResult:
        data: dict[str, Any] = json.loads(text)
        data["error_samples"] = tuple(data["error_samples"])
        return cls(**data)


class _Tally:
    """Shared by the buyers of one process; records only while ``measuring``."""

    __slots__ = ("error_samples", "errors", "latencies", "measuring", "reconnects", "responses")

    def __init__(self) -> None:
        self.measuring = False
        self.latencies: list[float] = []  # seconds, purchases only
        self.responses = 0
        self.errors = 0
        self.error_samples: list[str] = []
        self.reconnects = 0

    def record(self, status: int, body: bytes, latency: float) -> None:
        if not self.measuring:
            return
        self.responses += 1
        if status == 201:
            self.latencies.append(latency)
        else:
            self.error(f"{status} {body[:200].decode('utf-8', 'replace')}")

    def error(self, text: str) -> None:
        if not self.measuring:
            return
        self.errors += 1
        if len(self.error_samples) < ERROR_SAMPLES:
            self.error_samples.append(text)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            break
        parts.append((await reader.readexactly(size + 2))[:-2])
    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
        pass
    return b"".join(parts)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """(status, body, keep-alive) of one response; headers other than framing are skipped."""
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x status line: {head[:80]!r}")
    status = int(head[9:12])
    lower = head.lower()
    keep = b"\r\nconnection: close" not in lower
    start = lower.find(b"\r\ncontent-length:")
    if start >= 0:
        length = int(lower[start + 17 : lower.index(b"\r\n", start + 2)])
        body = await reader.readexactly(length)
    elif b"\r\ntransfer-encoding: chunked" in lower:
        body = await _read_chunked(reader)
    elif status in _NO_BODY:
        body = b""
    elif not keep:
        body = await reader.read()  # the body runs to the end of the connection
    else:
        raise ProtocolError(f"no Content-Length, no chunked body, no close: {head[:300]!r}")
    return status, body, keep


class _Buyer:
    """One keep-alive connection, one player, one purchase at a time (and with ``page``, what
    the page asks after it)."""

    __slots__ = (
        "_auth", "_body", "_head", "_host", "_key", "_me", "_page", "_port", "_reader", "_writer",
    )  # fmt: skip

    def __init__(
        self, host: str, port: int, token: str, key_prefix: str, *, page: str | None = None
    ) -> None:
        self._host = host
        self._port = port
        self._page = page
        self._body = JOUER_BODY if page == "jouer" else BODY
        self._auth = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        self._head = (
            f"POST {PATH} HTTP/1.1\r\n{self._auth}Content-Type: application/json\r\n"
            f"Content-Length: {len(self._body)}\r\nIdempotency-Key: {key_prefix}-"
        ).encode("ascii")
        self._me = f"GET {ME_PATH} HTTP/1.1\r\n{self._auth}\r\n".encode("ascii")
        self._key = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def buy(self, tally: _Tally) -> tuple[int, bytes, float]:
        """(status, body, latency in s) of one purchase under a fresh Idempotency-Key; with
        ``page``, of the first request after it that failed, if any."""
        request = b"%b%d\r\n\r\n%b" % (self._head, self._key, self._body)
        self._key += 1
        start = time.perf_counter()
        status, body = await self._exchange(request, tally)
        if status == 201 and self._page is not None:
            status, body = await self._after(body, tally)
            if status == 200:
                status = 201  # the page's purchase is complete
        return status, body, time.perf_counter() - start

    async def _after(self, bought: bytes, tally: _Tally) -> tuple[int, bytes]:
        """What the page asks once the purchase ``bought`` is answered: in ``jouer`` grids 1 to
        3 read and the play ended in one reveal, then the balance; (status, body) of the first
        that fails, or of the last."""
        if self._page == "jouer":
            play = f"{PATH}/{json.loads(bought)['play_id']}"
            for grid in range(1, GRIDS):
                read = f"GET {play}/grids/{grid} HTTP/1.1\r\n{self._auth}\r\n".encode("ascii")
                status, answer = await self._exchange(read, tally)
                if status != 200:
                    return status, answer
            body = b'{"grids":[1,2,3,4]}'
            ending = (
                f"POST {play}/reveal HTTP/1.1\r\n{self._auth}Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode("ascii") + body
            status, answer = await self._exchange(ending, tally)
            if status != 200:
                return status, answer
        return await self._exchange(self._me, tally)

    async def _exchange(self, request: bytes, tally: _Tally) -> tuple[int, bytes]:
        """Send ``request`` and read its answer: (status, body)."""
        for retry in (False, True):
            fresh = self._writer is None
            if self._reader is None or self._writer is None:
                self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
            # No drain(): the request is a few hundred bytes and we wait for the answer anyway.
            self._writer.write(request)
            try:
                status, body, keep = await _read_response(self._reader)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self.close()
                # A kept-alive connection the server closed before answering: send again, once,
                # on a new one (same key, so no double purchase).
                silent = isinstance(exc, ConnectionError) or not exc.partial
                if fresh or retry or not silent:
                    raise
                tally.reconnects += 1
                continue
            if not keep:
                self.close()
                tally.reconnects += 1
            return status, body
        raise AssertionError("unreachable")

    async def run(self, tally: _Tally) -> None:
        """Buy until cancelled; failed requests are counted and the connection reopened."""
        while True:
            try:
                status, body, latency = await self.buy(tally)
            except (OSError, asyncio.IncompleteReadError) as exc:
                tally.error(f"connection: {exc!r}")
                self.close()
                await asyncio.sleep(0.01)  # do not spin on a server that refuses
                continue
            tally.record(status, body, latency)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _percentile_ms(ordered: list[float], q: float) -> float:
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1000 if ordered else float("nan")


async def run(
    host: str, port: int, tokens: list[str], seconds: float, *, page: str | None = None
) -> LoadResult:
    """One buyer per token; each connects and buys once (warm-up), then all buy for ``seconds``.

    The buyers connect one after another, as players arrive. All in the same instant, the
    server's first worker to wake accepted most of them (uvicorn's workers share one socket, and
    each accepts all that wait): splits from 16/16 to 0/32, and a worker left with one or two
    buyers sold them in batches of one, each a turn of the SQLite writer lock
    (docs/performance.md, stop 21)."""
    tally = _Tally()
    key_prefix = secrets.token_hex(8)
    buyers = [_Buyer(host, port, token, key_prefix, page=page) for token in tokens]
    try:
        for buyer in buyers:
            await buyer.buy(tally)
        tasks = [asyncio.create_task(buyer.run(tally)) for buyer in buyers]
        tally.measuring = True
        start, cpu = time.perf_counter(), _cpu_s()
        await asyncio.sleep(seconds)
        tally.measuring = False
        elapsed, cpu = time.perf_counter() - start, _cpu_s() - cpu
        for task in tasks:
            task.cancel()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, BaseException) and not isinstance(
                outcome, asyncio.CancelledError
            ):
                raise outcome  # a ProtocolError, or a bug: do not report a partial run
    finally:
        for buyer in buyers:
            buyer.close()
    ordered = sorted(tally.latencies)
    return LoadResult(
        purchases=len(ordered),
        responses=tally.responses,
        elapsed_s=elapsed,
        p50_ms=_percentile_ms(ordered, 0.50),
        p99_ms=_percentile_ms(ordered, 0.99),
        errors=tally.errors,
        error_samples=tuple(tally.error_samples),
        reconnects=tally.reconnects,
        cpu_s=cpu,
    )


def main() -> None:
    if len(sys.argv) == 1:  # e.g. `make bench`, which runs every script here
        print("loadgen.py: driven by bench_purchases.py (see --help); nothing to run alone")
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--page", choices=PAGE_MODES, help="play as the page does, in this mode")
    args = parser.parse_args()
    tokens = sys.stdin.read().split()
    if not tokens:
        parser.error("no bearer tokens on stdin (one a line, one buyer each)")
    # uvloop, as the server runs on: the client's CPU is taken from the same two cores.
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(run(args.host, args.port, tokens, args.seconds, page=args.page))
    print(result.to_json())


if __name__ == "__main__":
    main()
