"""A jouer play left unfinished is finished by the server after a while: when, on the play.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plays") as plays:
        plays.add_column(sa.Column("finished_by_server_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plays") as plays:
        plays.drop_column("finished_by_server_at")
