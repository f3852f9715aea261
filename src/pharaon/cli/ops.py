"""Operator commands: ``db upgrade``, ``blocks load/list/deactivate``, ``serve``, ``audit``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from pharaon.cli.app import app, fail
from pharaon.cli.operators import AsOperator, acting
from pharaon.game.money import format_cents
from pharaon.game.rules import rules
from pharaon.service import audit, blocks, loading
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.store.engine import DatabaseUrlError, make_engine, make_sessionmaker
from pharaon.store.migrate import is_current, upgrade
from pharaon.store.settings import Settings

db_app = typer.Typer(help="The database: schema migrations.", no_args_is_help=True)
blocks_app = typer.Typer(help="Blocks of game units: load, list, deactivate.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(blocks_app, name="blocks")

DatabaseUrl = Annotated[
    str | None,
    typer.Option("--database-url", help="SQLAlchemy URL (default: PHARAON_DATABASE_URL)."),
]


def _settings(database_url: str | None) -> Settings:
    settings = Settings()
    if database_url:
        settings = settings.model_copy(update={"database_url": database_url})
    return settings


@contextmanager
def _engine(settings: Settings, *, migrate: bool = False) -> Iterator[Engine]:
    try:
        engine = make_engine(settings.database_url)
    except DatabaseUrlError as exc:
        fail(str(exc))
    try:
        if migrate:
            upgrade(engine)
        elif not is_current(engine):
            fail("the database schema is not current: run `pharaon db upgrade` first")
        yield engine
    except SQLAlchemyError as exc:
        fail(f"database error: {str(exc).splitlines()[0]}")
    finally:
        engine.dispose()


class _Bar:
    """A rich progress bar fed by ``progress(stage, done, total)`` callbacks."""

    def __init__(self, progress: Progress, prefix: str = "") -> None:
        self._progress = progress
        self._prefix = prefix
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        name = f"{self._prefix}{stage}"
        if name not in self._tasks:
            self._tasks[name] = self._progress.add_task(name, total=max(total, 1))
        self._progress.update(self._tasks[name], completed=done, total=max(total, 1))


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description:32}"),
        BarColumn(),
        TextColumn("{task.completed:>9,}/{task.total:,}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrl = None) -> None:
    """Create or migrate the database schema to the newest revision."""
    settings = _settings(database_url)
    with _engine(settings, migrate=True):
        typer.echo("database schema is current")


@blocks_app.command("load")
def blocks_load(
    file: Annotated[Path, typer.Argument(help="A block file (Parquet) from the block factory.")],
    as_email: AsOperator = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Verify a block file and load it; refuses one that fails or is already loaded."""
    settings = _settings(database_url)
    with _engine(settings) as engine, make_sessionmaker(engine)() as session, _progress() as bar:
        actor = acting(session, as_email, admin=True)
        try:
            block_id = loading.load_block_file(
                session=session,
                path=file,
                allow_test=settings.allow_test_blocks,
                actor=actor,
                now=utcnow(),
                progress=_Bar(bar),
            )
        except ServiceError as exc:
            fail(exc.detail)
    typer.echo(f"loaded block {block_id}")


@blocks_app.command("list")
def blocks_list(database_url: DatabaseUrl = None) -> None:
    """The blocks: state, units sold, remaining lots by amount."""
    settings = _settings(database_url)
    with _engine(settings) as engine, make_sessionmaker(engine)() as session:
        found = blocks.list_blocks(session=session)
    table = Table("id", "block", "price", "state", "sold", "remaining lots")
    for b in found:
        lots = ", ".join(f"{n}×{format_cents(lot)}" for lot, n in b.remaining_lots)
        name = f"{b.emission}/{b.block_number}" + (" (test)" if b.is_test else "")
        state = b.state if b.deactivation_reason is None else f"{b.state}: {b.deactivation_reason}"
        table.add_row(
            str(b.block_id),
            name,
            format_cents(b.price_cents),
            state,
            f"{b.sold:,}/{b.block_size:,}",
            lots,
        )
    Console(width=200).print(table)


@blocks_app.command("deactivate")
def blocks_deactivate(
    block_id: Annotated[int, typer.Argument(help="The block's id (see `blocks list`).")],
    reason: Annotated[str, typer.Option("--reason", help="Why; written to the audit log.")],
    as_email: AsOperator = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Stop a block's sales (logged); its past plays stay untouched."""
    settings = _settings(database_url)
    with _engine(settings) as engine, make_sessionmaker(engine)() as session:
        actor = acting(session, as_email, admin=True)
        try:
            blocks.deactivate(
                session=session, block_id=block_id, reason=reason, actor=actor, now=utcnow()
            )
        except ServiceError as exc:
            fail(exc.detail)
    typer.echo(f"block {block_id} deactivated")


@app.command("audit")
def audit_command(database_url: DatabaseUrl = None) -> None:
    """Check the ledger, balances, units against plays, block sizes and the audit chain."""
    settings = _settings(database_url)
    with _engine(settings) as engine, make_sessionmaker(engine)() as session:
        report = audit.run_audit(session=session)
    for name, passed, found in report.checks:
        typer.echo(f"{'ok  ' if passed else 'FAIL'}  {name}: {found}")
    if not report.ok:
        fail("audit failed: " + "; ".join(report.failures), code=1)


def _first_start(engine: Engine, settings: Settings) -> None:
    """On an empty database, generate and load one block per price, so there is a game."""
    from pharaon.pool.generate import generate_block

    with make_sessionmaker(engine)() as session:
        if blocks.has_blocks(session=session):
            return
        typer.echo("first start: generating one block per price (this takes a while)", err=True)
        with _progress() as bar:
            for price in rules().prices_cents:
                prefix = f"{format_cents(price)} "
                block = generate_block(price, progress=_Bar(bar, prefix))
                loading.load_block(
                    session=session,
                    block=block,
                    allow_test=settings.allow_test_blocks,
                    actor="operator:first-start",
                    now=utcnow(),
                    progress=_Bar(bar, prefix),
                )


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8000,
    database_url: DatabaseUrl = None,
    workers: Annotated[int, typer.Option(help="Worker processes.", min=1, max=64)] = 1,
    first_start: Annotated[
        bool, typer.Option(help="On an empty database, generate one block per price.")
    ] = True,
) -> None:
    """Migrate the database, load blocks on a first start, and serve the API and the page."""
    settings = _settings(database_url)
    with _engine(settings, migrate=True) as engine:
        if first_start:
            _first_start(engine, settings)
    # Replace this process by the server (pharaon.web.serve): the workers start lean (no
    # block factory, no numba) and read their settings, the database URL included, from the
    # environment.
    os.environ["PHARAON_DATABASE_URL"] = settings.database_url
    typer.echo(f"serving on http://{host}:{port}/ (API docs at /api/docs)", err=True)
    sys.stderr.flush()
    sys.stdout.flush()
    argv = [sys.executable, "-m", "pharaon.web.serve"]
    argv += ["--host", host, "--port", str(port), "--workers", str(workers)]
    os.execv(sys.executable, argv)
