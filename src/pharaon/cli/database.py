"""The commands' way to the database: the settings, an engine on a current schema, a session.

Every command that reads or writes the database goes through here; a database error ends the
command with one line. The server's layers are imported when a command asks, so the block
commands start without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from pharaon.cli.app import fail

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

    from pharaon.store.settings import Settings

database_url_option = click.option(
    "--database-url", help="SQLAlchemy URL (default: PHARAON_DATABASE_URL)."
)


def settings_for(database_url: str | None) -> Settings:
    from pharaon.store.settings import Settings

    settings = Settings()
    if database_url:
        settings = settings.model_copy(update={"database_url": database_url})
    return settings


@contextmanager
def engine_for(settings: Settings, *, migrate: bool = False) -> Iterator[Engine]:
    from sqlalchemy.exc import SQLAlchemyError

    from pharaon.store.engine import DatabaseUrlError, make_engine
    from pharaon.store.migrate import is_current, upgrade

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


@contextmanager
def session_for(settings: Settings) -> Iterator[Session]:
    """A session on a database whose schema is current; the caller commits."""
    from pharaon.store.engine import make_sessionmaker

    with engine_for(settings) as engine, make_sessionmaker(engine)() as session:
        yield session
