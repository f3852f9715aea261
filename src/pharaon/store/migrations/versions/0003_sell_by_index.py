"""PostgreSQL: ``pharaon_sell`` reaches its rows by index, always.

Every statement of ``pharaon_sell`` (migration 0002) touches a handful of rows by key. PL/pgSQL
keeps the plans of a function's statements for the life of the connection, re-planned only when
a table is analysed again; a plan made while a table was small (a new database: the idempotency
keys, the accounts, the players) may scan the whole table, which then costs more at every batch
as the table grows until autovacuum next analyses it (docs/performance.md). So the function
runs with ``enable_seqscan`` off: the planner then takes an index wherever one serves (a table
without a usable index is still scanned).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SELL = (
    "pharaon_sell(integer[], integer[], text[], smallint[], text[], text[], timestamptz, "
    "integer, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER FUNCTION {SELL} SET enable_seqscan = off")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER FUNCTION {SELL} RESET enable_seqscan")
