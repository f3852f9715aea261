"""Persistence: SQLAlchemy tables, engine set-up (SQLite, PostgreSQL), Alembic migrations."""
