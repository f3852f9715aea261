"""The ministry's banned-gamblers list (« interdits de jeux », service/banned.py).

``banned_gamblers``: the people on the list, as the keys of their names and their birth date;
``banned_list``: its one row (when it was loaded, its entries, the file's SHA-256, when the
players were last checked against it), made here with an empty list; ``players.banned_at``:
when a player was found on it and suspended for it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.add_column(sa.Column("banned_at", UTCDateTime(), nullable=True))
    op.create_table(
        "banned_gamblers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("last_name", sa.String(length=200), nullable=False),
        sa.Column("first_names", sa.String(length=200), nullable=False),
        sa.Column("birth_date", sa.Date(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_banned_gamblers")),
    )
    op.create_index(
        "ix_banned_gamblers_birth_date", "banned_gamblers", ["birth_date"], unique=False
    )
    banned_list = op.create_table(
        "banned_list",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("loaded_at", UTCDateTime(), nullable=True),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint("id = 1", name=op.f("ck_banned_list_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_banned_list")),
    )
    op.bulk_insert(banned_list, [{"id": 1, "entries": 0}])


def downgrade() -> None:
    op.drop_table("banned_list")
    op.drop_index("ix_banned_gamblers_birth_date", table_name="banned_gamblers")
    op.drop_table("banned_gamblers")
    with op.batch_alter_table("players") as players:
        players.drop_column("banned_at")
