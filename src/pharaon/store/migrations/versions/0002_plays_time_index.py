"""Plays by time: the operator's watch (service/stock.py) and the sales report read the plays
of the last day, which without it means reading every play.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_plays_time", "plays", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_plays_time", table_name="plays")
