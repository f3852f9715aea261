"""The commands' way to the database: the settings, and the two kinds of transaction
(:class:`pharaon.store.transactions.Transactions`) on a current schema.

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
    from pharaon.settings import Settings
    from pharaon.store.transactions import Transactions

database_url_option = click.option(
    "--database-url", help="SQLAlchemy URL (default: PHARAON_DATABASE_URL)."
)


def settings_for(database_url: str | None) -> Settings:
    """The command's settings, from ``PHARAON_*``, with ``database_url`` if given; the
    password hashing they name is put in force for the command's hashes."""
    from pharaon.service import passwords
    from pharaon.settings import Settings

    settings = Settings()
    if database_url:
        settings = settings.model_copy(update={"database_url": database_url})
    passwords.use(settings.password_hashing)
    return settings


@contextmanager
def database_for(
    settings: Settings, *, migrate: bool = False, create: bool = False
) -> Iterator[Transactions]:
    """Transactions on the settings' database, its schema migrated first if ``migrate``, else
    required current; any database error ends the command with one line. A SQLite database
    is made only if ``create`` or at the default path (``var/pharaon.db``): a mistyped path
    is an error."""
    from sqlalchemy.exc import SQLAlchemyError

    from pharaon.settings import default_database_url
    from pharaon.store.engine import DatabaseUrlError, make_engine
    from pharaon.store.faults import DatabaseRefusedValueError, DatabaseUnavailableError
    from pharaon.store.migrate import is_current, upgrade
    from pharaon.store.transactions import Transactions

    try:
        create = create or settings.database_url == default_database_url()
        engine = make_engine(settings.database_url, create=create)
    except DatabaseUrlError as exc:
        fail(str(exc))
    try:
        if migrate:
            upgrade(engine)
        elif not is_current(engine):
            fail("the database schema is not current: run `pharaon db upgrade` first")
        db = Transactions(engine)
        try:
            yield db
        finally:
            db.close()
    except DatabaseUnavailableError as exc:
        fail(f"the database is unavailable: {exc}")
    except DatabaseRefusedValueError as exc:
        fail(f"the database refused a value: {exc}")
    except SQLAlchemyError as exc:
        fail(f"database error: {str(exc).splitlines()[0]}")
    finally:
        engine.dispose()
