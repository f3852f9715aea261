"""The FastAPI application factory: ``/api/v1`` routers, the player's page at ``/``, the
operator's console at ``/operator/``, their files under ``/static/``. Nothing a second server
would need lives in this process: sessions, idempotency keys and lock-outs are in the
database, reached through its two doors (``web/database.py``)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine

from pharaon import __version__
from pharaon.service import checkpoints, passwords, receipts
from pharaon.service.banned import check_if_due
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.service.identity import suspend_overdue
from pharaon.service.plays import finish_left
from pharaon.settings import Settings
from pharaon.store.engine import make_engine
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.web import errors, observe
from pharaon.web.database import WRITE_TOGETHER, Database, Writer
from pharaon.web.guards import Guards
from pharaon.web.routers import (
    audit,
    blocks,
    me,
    meta,
    operator_api,
    players,
    plays,
    prizes,
    protection,
    sessions,
    wallet,
)
from pharaon.web.schemas import ERROR_RESPONSES
from pharaon.web.serve import WRITER_ENV
from pharaon.web.writer import WriterLine

API_PREFIX = "/api/v1"
STATIC = Path(str(resources.files("pharaon.web").joinpath("static")))
# Swagger UI's files for /api/docs (its bundle and style sheet), as the fastapi-swagger package
# ships them; its own page is not used (an inline script, which the CSP refuses).
SWAGGER_UI = Path(str(resources.files("fastapi_swagger").joinpath("resources")))
# How often the server looks whether the day's checkpoint of the audit chain is due, and for
# jouer plays left unfinished too long.
CHORES_LOOK_SECONDS = 3600
_log = logging.getLogger(__name__)


async def _chores(db: Database, settings: Settings, stop: asyncio.Event) -> None:
    """At start and every hour until ``stop`` is set: take a checkpoint of the audit chain if
    the last is a day old, and finish the jouer plays left unfinished for
    ``settings.jouer_finish_days``, and check the verified players against the banned-gamblers
    list if the last check is a day old; of several servers, one does each (the audit head's
    lock, the plays' rows, the list's row)."""
    left = timedelta(days=settings.jouer_finish_days)
    unverified = timedelta(days=settings.identity_days)
    while not stop.is_set():
        try:
            await db.write(checkpoints.take_if_due, now=utcnow())
            finished = await db.write(finish_left, now=utcnow(), after=left)
            if finished:
                _log.info("%d jouer plays left unfinished finished by the server", finished)
            # Accounts left provisional too long: suspended for play (service/identity.py).
            await db.write(suspend_overdue, now=utcnow(), after=unverified)
            # Verified players against the banned-gamblers list, once a day (service/banned.py).
            await db.write(check_if_due, now=utcnow())
        except DatabaseUnavailableError as exc:  # a busy or lost database: at the next look
            _log.warning("chores not done: %s", exc)
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), CHORES_LOOK_SECONDS)


def create_app(
    settings: Settings | None = None, *, engine: Engine | None = None, writer: Writer | None = None
) -> FastAPI:
    """The application over ``engine`` (made from ``settings.database_url`` if not given),
    its writes run by ``writer`` (the server's writer process) if given, else in this
    process."""
    settings = settings or Settings()
    # The process's hashes: a server's workers read it from PHARAON_PASSWORD_HASHING.
    passwords.use(settings.password_hashing)
    own_engine = engine is None
    # The writers' pool (the readers have one of their own).
    connections = settings.writers + WRITE_TOGETHER
    engine = engine or make_engine(settings.database_url, pool_size=connections, create=False)
    metrics = observe.Metrics()
    db = Database(
        engine,
        readers=settings.readers,
        writers=settings.writers,
        deadline=settings.db_deadline_seconds,
        slow_deadline=settings.db_slow_deadline_seconds,
        on_batch=metrics.batch,
        writer=writer,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        daily = asyncio.create_task(_chores(db, settings, stop))
        yield
        stop.set()
        await daily
        db.close()
        if own_engine:
            engine.dispose()

    app = FastAPI(
        title="Pharaon",
        version=__version__,
        description="The online instant lottery game « Pharaon ». Money in integer cents.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's Swagger UI comes from a CDN: ours is served here (below)
        openapi_url="/api/v1/openapi.json",
        redoc_url=None,
        # Nothing here exports OpenTelemetry data: FastAPI need not look for its providers at
        # every request (docs/performance.md).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.database = db
    # The receipts' key, made at the first start (service/receipts.py), and the blocks'
    # identities they sign, read once each.
    app.state.receipts = receipts.load(settings.keys_dir)
    app.state.block_identities = {}
    errors.install(app)
    # Routes are matched in order: the purchases, the busiest, first.
    for module in (
        plays,
        sessions,
        me,
        wallet,
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

    @app.get("/api/docs", include_in_schema=False)
    def api_docs() -> FileResponse:
        """The API's reference: Swagger UI drawn from the OpenAPI document, its files served
        here (fastapi-swagger's): nothing from outside (a closed network, a strict CSP)."""
        page = STATIC / "apidocs.html"
        if not page.is_file():
            raise NotFoundError("the API docs are not installed")
        return FileResponse(page, headers={"Cache-Control": "no-cache"})

    @app.get("/operator/", include_in_schema=False)
    def operator_console() -> FileResponse:
        page = STATIC / "operator" / "index.html"
        if not page.is_file():
            raise NotFoundError("the operator's console is not installed")
        return FileResponse(page, headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")
    app.mount("/api/docs/assets", StaticFiles(directory=SWAGGER_UI), name="swagger-ui")
    # Outermost last: the body cap sees the request first; every answer, a 413 too, gets the
    # security headers, and is counted, timed and logged (with /metrics, web/observe.py).
    app.add_middleware(Guards)
    observe.install(app, metrics, settings)
    return app


def create_app_from_env() -> FastAPI:
    """For ``uvicorn --factory``: settings from the environment (``PHARAON_*``), the writes
    handed to the server's writer when it has one (``PHARAON_WRITER_SOCKET``, set by
    :mod:`pharaon.web.serve`)."""
    settings = Settings()
    address = os.environ.get(WRITER_ENV)
    if not address:
        return create_app(settings)
    line = WriterLine(address, connect_seconds=settings.db_deadline_seconds)
    return create_app(settings, writer=line)
