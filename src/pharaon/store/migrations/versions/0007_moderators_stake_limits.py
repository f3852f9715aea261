"""The moderators and the stake limits: limit kinds with longer names (``stake_weekly``), and
each player's stakes per hour, which the stake limits count (filled from the plays already
sold).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# A play's hour, as UTCDateTime stores it: naive UTC text on SQLite, timestamptz on PostgreSQL.
_HOUR = {
    "sqlite": "substr(created_at, 1, 13) || ':00:00.000000'",
    "postgresql": "date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
}


def upgrade() -> None:
    with op.batch_alter_table("deposit_limits") as limits:
        limits.alter_column("period", type_=sa.String(length=16), existing_nullable=False)
    op.create_table(
        "stake_hours",
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("hour", UTCDateTime(), nullable=False),
        sa.Column("stakes_cents", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_stake_hours_player_id_players")
        ),
        sa.PrimaryKeyConstraint("player_id", "hour", name=op.f("pk_stake_hours")),
    )
    hour = _HOUR[op.get_bind().dialect.name]
    op.execute(
        "INSERT INTO stake_hours (player_id, hour, stakes_cents) "
        f"SELECT player_id, {hour}, sum(stake_cents) FROM plays GROUP BY player_id, {hour}"
    )


def downgrade() -> None:
    op.drop_table("stake_hours")
    op.execute("DELETE FROM deposit_limits WHERE period LIKE 'stake_%'")
    with op.batch_alter_table("deposit_limits") as limits:
        limits.alter_column("period", type_=sa.String(length=8), existing_nullable=False)
