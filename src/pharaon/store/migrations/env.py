"""Alembic environment: the engine is handed over by pharaon.store.migrate. The migrations run
once per deployment: a server that starts beside another waits for it, then finds them done."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from pharaon.store.dialect import once_per_deployment
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
        # Before the schema's version is read: the second server reads the first's.
        once_per_deployment(connection, "migrations")
        context.run_migrations()
    connection.commit()
