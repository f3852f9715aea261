"""The FastAPI application factory: ``/api/v1`` routers, the player's page at ``/``, the
operator's console at ``/operator/``, their files under ``/static/``. Nothing a second worker
would need lives in this process: sessions, idempotency keys and lock-outs are in the
database."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from importlib import resources
from pathlib import Path

from anyio import to_thread
from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pharaon import __version__
from pharaon.service import checkpoints
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.store.engine import make_engine, make_reader, make_sessionmaker
from pharaon.store.settings import Settings
from pharaon.web import errors, observe
from pharaon.web.desk import ReadDesk, RevealDesk, SalesDesk, SessionDesk
from pharaon.web.guards import BodyLimit, SecurityHeaders
from pharaon.web.routers import (
    audit,
    blocks,
    deposits,
    me,
    meta,
    operator_api,
    players,
    plays,
    prizes,
    protection,
    sessions,
)
from pharaon.web.schemas import ERROR_RESPONSES

API_PREFIX = "/api/v1"
# The sales, reveal, session and read desks: a database connection each, in their batches.
DESKS = 4
STATIC = Path(str(resources.files("pharaon.web").joinpath("static")))
# How often the server looks whether the day's checkpoint of the audit chain is due.
CHECKPOINT_LOOK_SECONDS = 3600
_log = logging.getLogger(__name__)


async def _daily_checkpoints(writers: sessionmaker[Session], stop: asyncio.Event) -> None:
    """Take a checkpoint of the audit chain at start and whenever the last is a day old, until
    ``stop`` is set. A look under way is finished, never abandoned: its thread holds a
    connection of the engine, which the caller disposes of after."""

    def look() -> None:
        with writers() as session, session.begin():
            checkpoints.take_if_due(session, now=utcnow())

    while not stop.is_set():
        try:
            await to_thread.run_sync(look)
        except SQLAlchemyError as exc:  # a busy or lost database: try again at the next look
            _log.warning("audit checkpoint not taken: %s", str(exc).splitlines()[0])
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), CHECKPOINT_LOOK_SECONDS)


def create_app(settings: Settings | None = None, *, engine: Engine | None = None) -> FastAPI:
    """The application over ``engine`` (made from ``settings.database_url`` if not given)."""
    settings = settings or Settings()
    own_engine = engine is None
    engine = engine or make_engine(settings.database_url, pool_size=settings.pool_size + DESKS)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The routes that are not async run in threads, each holding a pooled connection. More
        # threads than connections (anyio's default is 40) would open and close connections
        # beyond the pool at each request, a new PostgreSQL backend each time
        # (docs/performance.md).
        to_thread.current_default_thread_limiter().total_tokens = settings.pool_size
        stop = asyncio.Event()
        daily = asyncio.create_task(_daily_checkpoints(app.state.sessionmaker, stop))
        yield
        stop.set()
        await daily
        app.state.desk.close()
        app.state.reveal_desk.close()
        app.state.session_desk.close()
        app.state.read_desk.close()
        if own_engine:
            engine.dispose()

    app = FastAPI(
        title="Pharaon",
        version=__version__,
        description="The online instant lottery game « Pharaon ». Money in integer cents.",
        lifespan=lifespan,
        docs_url="/api/docs",
        openapi_url="/api/v1/openapi.json",
        redoc_url=None,
        # Nothing here exports OpenTelemetry data: FastAPI need not look for its providers at
        # every request (docs/performance.md).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    idle = timedelta(minutes=settings.session_idle_minutes)
    app.state.reader = reader = make_reader(engine)
    metrics = observe.Metrics(reader)
    app.state.desk = SalesDesk(app.state.sessionmaker, on_sale=metrics.sold)
    app.state.reveal_desk = RevealDesk(app.state.sessionmaker)
    app.state.session_desk = SessionDesk(reader, idle=idle)
    app.state.read_desk = ReadDesk(reader)
    errors.install(app)
    # Routes are matched in order: the purchases, the busiest, first.
    for module in (
        plays,
        sessions,
        me,
        deposits,
        players,
        prizes,
        protection,
        blocks,
        audit,
        operator_api,
        meta,
    ):
        app.include_router(module.router, prefix=API_PREFIX, responses=ERROR_RESPONSES)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        page = STATIC / "index.html"
        if not page.is_file():
            raise NotFoundError("the page is not installed")
        return FileResponse(page, headers={"Cache-Control": "no-cache"})

    @app.get("/operator/", include_in_schema=False)
    def operator_console() -> FileResponse:
        page = STATIC / "operator" / "index.html"
        if not page.is_file():
            raise NotFoundError("the operator's console is not installed")
        return FileResponse(page, headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")
    # Outermost last: the body cap sees the request first; every answer, a 413 too, gets the
    # security headers, and is counted, timed and logged (with /metrics, web/observe.py).
    app.add_middleware(BodyLimit, seconds=settings.body_timeout_seconds)
    app.add_middleware(SecurityHeaders)
    observe.install(app, metrics, settings)
    return app


def create_app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: settings from the environment (``PHARAON_*``)."""
    return create_app(Settings())
