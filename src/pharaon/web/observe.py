"""Running it: the Prometheus metrics at ``/metrics`` and the JSON access log (the health check
is ``GET /api/v1/health``, in routers/meta.py).

- :class:`Metrics` holds the counters a worker updates (requests by route template and status,
  latency, purchases); a scrape reads the database's gauges (pending reveals, the pool) through
  the reader.
  Under ``pharaon serve`` the workers write their counters to files in
  ``PROMETHEUS_MULTIPROC_DIR`` (set by :mod:`pharaon.web.serve`, which owns the folder), and a
  scrape, whichever worker answers it, adds up all of them; without that variable (one process,
  the tests) they live in the process.
- :class:`Observe`, a pure ASGI middleware, counts each request and writes one JSON line for it
  on the logger ``pharaon.access`` (:mod:`pharaon.web.jsonlog`; to stderr under the server).
  Routes put who asked on the request's state (``player_id``, ``operator_id``): never a token,
  a cookie, a password nor the query string.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pharaon.service import gauges, stock
from pharaon.service.clock import utcnow
from pharaon.service.errors import ForbiddenError
from pharaon.settings import Settings
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import thresholds
from pharaon.web.jsonlog import ACCESS_LOGGER

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Latency buckets (seconds): a purchase takes a few milliseconds, a slow read a second.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)  # web/database.py MAX_BATCH
# A path no route matched: one label for them all, not one per path a scanner tries.
UNMATCHED = "unmatched"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# What routes may put on the request's state for the access log.
WHO = ("player_id", "operator_id")

_access = logging.getLogger(ACCESS_LOGGER)
_log = logging.getLogger(__name__)
# The *_created series: one more per series, of no use to the dashboards.
disable_created_metrics()  # type: ignore[no-untyped-call]


class _DatabaseGauges(Collector):
    """The gauges read from the database for a scrape (None: it could not be read)."""

    def __init__(self, found: gauges.Gauges | None) -> None:
        self._found = found

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("pharaon_database_up", "1 if the scrape could read the database.")
        up.add_metric([], 0 if self._found is None else 1)
        yield up
        if self._found is None:
            return
        yield GaugeMetricFamily(
            "pharaon_pending_reveals",
            "« Jouer » plays not fully uncovered.",
            value=self._found.pending_reveals,
        )
        sold = GaugeMetricFamily(
            "pharaon_pool_units_sold", "Units sold of the open block.", labels=["price_cents"]
        )
        left = GaugeMetricFamily(
            "pharaon_pool_units_remaining", "Units left in the open block.", labels=["price_cents"]
        )
        for use in self._found.pools:
            sold.add_metric([str(use.price_cents)], use.sold)
            left.add_metric([str(use.price_cents)], use.remaining)
        yield sold
        yield left
        yield from _watch_gauges(self._found.watch)


def _watch_gauges(watch: stock.Watch) -> Iterator[Metric]:
    """The operator's watch (service/stock.py): what deploy/prometheus/alerts.yml reads."""
    price = ["price_cents"]
    units = GaugeMetricFamily(
        "pharaon_stock_units", "Units left to sell: on sale and loaded behind.", labels=price
    )
    behind = GaugeMetricFamily(
        "pharaon_stock_blocks_behind", "Blocks loaded behind the one on sale.", labels=price
    )
    hours = GaugeMetricFamily(
        "pharaon_stock_hours_left",
        "Hours the units left last at the last 24 hours' pace (absent: no sale).",
        labels=price,
    )
    for line in watch.stock:
        units.add_metric([str(line.price_cents)], line.on_sale + line.units_behind)
        behind.add_metric([str(line.price_cents)], line.blocks_behind)
        if line.hours_left is not None:
            hours.add_metric([str(line.price_cents)], line.hours_left)
    yield from (units, behind, hours)
    ratios = {
        name: GaugeMetricFamily(f"pharaon_payout_day_{name}", text, labels=price)
        for name, text in (
            ("ratio", "Lots won per stakes since midnight UTC."),
            ("band_low_ratio", "The day's payout's lower bound for the units sold."),
            ("band_high_ratio", "The day's payout's upper bound for the units sold."),
        )
    }
    for p in watch.payouts:
        label = [str(p.price_cents)]
        ratios["ratio"].add_metric(label, p.payout_bp / 10_000)
        ratios["band_low_ratio"].add_metric(label, p.band_low_bp / 10_000)
        ratios["band_high_ratio"].add_metric(label, p.band_high_bp / 10_000)
    yield from ratios.values()
    alerts = GaugeMetricFamily(
        "pharaon_alerts", "The operator's alerts raised now, by kind.", labels=["kind"]
    )
    for kind in stock.ALERT_KINDS:
        alerts.add_metric([kind], sum(a.kind == kind for a in watch.alerts))
    yield alerts


class Metrics:
    """A worker's metrics over ``reader``; :meth:`scrape` renders them in Prometheus' text
    format, the other workers' too when ``PROMETHEUS_MULTIPROC_DIR`` is set."""

    def __init__(self) -> None:
        # Across processes the counters live in files; a registry of this process would only
        # repeat them.
        own = None if os.environ.get(MULTIPROC_ENV) else CollectorRegistry(auto_describe=True)
        self._registry = own
        self.requests = Counter(
            "pharaon_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=own,
        )
        self.latency = Histogram(
            "pharaon_http_request_duration_seconds",
            "Time to answer a request, by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=own,
        )
        self.purchases = Counter(
            "pharaon_purchases",
            "Units sold (retries answered with an earlier play not counted).",
            ["stake_cents", "mode"],
            registry=own,
        )
        self.stakes = Counter(
            "pharaon_purchase_stakes_cents",
            "Stakes of the units sold, in cents.",
            ["mode"],
            registry=own,
        )
        self.batches = Histogram(
            "pharaon_db_batch_size",
            "Requests served together by one batch at a door to the database (the purchases "
            "and the reveals share one transaction a batch), by door.",
            ["door"],
            buckets=BATCH_BUCKETS,
            registry=own,
        )
        # Each metric's children by their labels, made once: ``labels`` is slow.
        self._batches: dict[tuple[str, ...], Any] = {}
        self._requests: dict[tuple[str, ...], Any] = {}
        self._latency: dict[tuple[str, ...], Any] = {}
        self._sold: dict[tuple[str, ...], Any] = {}
        self._staked: dict[tuple[str, ...], Any] = {}

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        _child(self._requests, self.requests, method, route, str(status)).inc()
        _child(self._latency, self.latency, method, route).observe(seconds)

    def sold(self, stake_cents: int, mode: str) -> None:
        """Count one unit sold, once its sale is committed: a count that fails (the metrics
        folder full or gone) is logged, never the buyer's answer."""
        try:
            _child(self._sold, self.purchases, str(stake_cents), mode).inc()
            _child(self._staked, self.stakes, mode).inc(stake_cents)
        except OSError as exc:
            _log.warning("a sale was not counted: %s", exc)

    def batch(self, door: str, size: int) -> None:
        """Count one batch of ``size`` requests served at ``door`` (web/database.py); a count
        that fails is logged, never the requests' answers."""
        try:
            _child(self._batches, self.batches, door).observe(size)
        except OSError as exc:
            _log.warning("a batch was not counted: %s", exc)

    def scrape(self, found: gauges.Gauges | None) -> bytes:
        """The metrics in Prometheus' text format, with the gauges ``found`` in the database
        (None: it could not be read)."""
        registry = CollectorRegistry(auto_describe=False)
        if self._registry is None:
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        else:
            registry.register(_Forward(self._registry))
        registry.register(_DatabaseGauges(found))
        return generate_latest(registry)


def _child(cache: dict[tuple[str, ...], Any], metric: Any, *labels: str) -> Any:
    """``metric``'s child for ``labels``, from ``cache`` or made there."""
    child = cache.get(labels)
    if child is None:
        child = cache[labels] = metric.labels(*labels)
    return child


class _Forward(Collector):
    """The metrics of another registry (this process's counters), at each scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        return self._registry.collect()


def route_of(scope: Scope) -> str:
    """The template of the route that answered (``/api/v1/plays/{play_id}``), never the path."""
    # FastAPI (pinned) keeps the matched route of an included router, with its prefix, here.
    context = scope.get("fastapi", {}).get("effective_route_context")
    path = getattr(context, "path_format", None) or getattr(scope.get("route"), "path_format", "")
    if path:
        return str(path)
    if scope.get("endpoint") is not None and scope.get("root_path"):
        return f"{scope['root_path']}/{{path}}"  # a mount: the static files
    return UNMATCHED


class Observe:
    """Counts each HTTP request by route template and status, times it, and logs it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless an answer starts: the error middleware outside will send a 500
        state = scope.setdefault("state", {})  # shared with request.state down the line

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            route = route_of(scope)
            try:
                self.metrics.request(method, route, status, seconds)
            except OSError as exc:  # the metrics folder full or gone: not the answer's fault
                _log.warning("a request was not counted: %s", exc)
            if _access.isEnabledFor(logging.INFO):
                _log_access(method, route, status, seconds, state)


def _log_access(
    method: str, route: str, status: int, seconds: float, state: MutableMapping[str, Any]
) -> None:
    line: dict[str, Any] = {
        "method": method,
        "route": route,
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
    }
    for name in WHO:
        if state.get(name) is not None:
            line[name] = state[name]
    _access.info("%s %s %d", method, route, status, extra={"access": line})


def install(app: FastAPI, metrics: Metrics, settings: Settings) -> None:
    """Add ``GET /metrics`` (not in the API's schema) and the middleware, outermost: call it
    after the other middleware."""
    app.state.metrics = metrics

    allowed = frozenset(ip.strip() for ip in settings.metrics_allow_ips.split(",") if ip.strip())

    @app.get("/metrics", include_in_schema=False)
    async def get_metrics(request: Request, db: DatabaseDep) -> Response:
        # Sales figures are the operator's: only the monitoring host reads them.
        if request.client is None or request.client.host not in allowed:
            raise ForbiddenError("/metrics is for the monitoring host (PHARAON_METRICS_ALLOW_IPS)")
        try:
            found: gauges.Gauges | None = await db.read(
                gauges.look, now=utcnow(), thresholds=thresholds(settings)
            )
        except DatabaseUnavailableError:
            found = None
        return Response(metrics.scrape(found), media_type=CONTENT_TYPE_LATEST)

    app.add_middleware(Observe, metrics=metrics)
