"""The back office: operators (argon2 password, TOTP secret, role) and their sessions;
players' closed accounts.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("players") as batch:
        batch.add_column(sa.Column("closed_at", UTCDateTime(), nullable=True))
    op.create_table(
        "operators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("totp_secret", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_totp_step", sa.BigInteger(), nullable=True),
        sa.CheckConstraint("role IN ('admin', 'analyst')", name=op.f("ck_operators_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
        sa.UniqueConstraint("email", name=op.f("uq_operators_email")),
    )
    op.create_table(
        "operator_sessions",
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("operator_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_operator_sessions_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("token_sha256", name=op.f("pk_operator_sessions")),
    )
    op.create_index(op.f("ix_operator_sessions_operator_id"), "operator_sessions", ["operator_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_operator_sessions_operator_id"), table_name="operator_sessions")
    op.drop_table("operator_sessions")
    op.drop_table("operators")
    with op.batch_alter_table("players") as batch:
        batch.drop_column("closed_at")
