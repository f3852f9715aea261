"""Alembic environment: the engine is handed over by pharaon.store.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from pharaon.store.tables import Base

engine = context.config.attributes.get("engine")
if not isinstance(engine, Engine):
    raise RuntimeError("run migrations through pharaon.store.migrate (pharaon db upgrade)")

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
