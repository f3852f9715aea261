"""An operator's measures on a player's account: a suspension (with or without an end) on the
player's row, and every measure or note, with its reason, in ``player_notes``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.add_column(sa.Column("suspended_at", UTCDateTime(), nullable=True))
        players.add_column(sa.Column("suspended_until", UTCDateTime(), nullable=True))
    op.create_table(
        "player_notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("operator_id", sa.Integer(), nullable=False),
        sa.Column("measure", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("until", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "measure IN ('note', 'suspend', 'exclude', 'lift', 'close')",
            name=op.f("ck_player_notes_known_measure"),
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_player_notes_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_player_notes_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_player_notes")),
    )
    op.create_index("ix_player_notes_player", "player_notes", ["player_id", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_player_notes_player", table_name="player_notes")
    op.drop_table("player_notes")
    with op.batch_alter_table("players") as players:
        players.drop_column("suspended_until")
        players.drop_column("suspended_at")
