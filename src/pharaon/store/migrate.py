"""Alembic migrations shipped in the package, run by ``pharaon db upgrade`` and ``serve``."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine


def _config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", "pharaon.store:migrations")
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine) -> None:
    """Bring the database's schema to the newest revision."""
    command.upgrade(_config(engine), "head")


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database's schema back to ``revision`` (for tests of the migrations)."""
    command.downgrade(_config(engine), revision)


def is_current(engine: Engine) -> bool:
    """Whether the database is at the newest revision."""
    head = ScriptDirectory.from_config(_config(engine)).get_current_head()
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision() == head
