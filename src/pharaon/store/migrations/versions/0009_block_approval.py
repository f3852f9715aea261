"""An auditor's sign-off before sale (service/approvals.py).

``blocks.loaded_by``: who loaded the block (the audit record's actor); ``blocks.approved_at``
and ``blocks.approved_by``: when and by which auditor it was approved, after its independent
verification; only approved blocks open. ``operators.role`` admits ``auditor``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("blocks") as blocks:
        blocks.add_column(sa.Column("loaded_by", sa.String(length=200), nullable=True))
        blocks.add_column(sa.Column("approved_at", UTCDateTime(), nullable=True))
        blocks.add_column(sa.Column("approved_by", sa.String(length=200), nullable=True))
    with op.batch_alter_table("operators") as operators:
        operators.drop_constraint(op.f("ck_operators_role"), type_="check")
        operators.create_check_constraint("role", "role IN ('admin', 'analyst', 'auditor')")


def downgrade() -> None:
    with op.batch_alter_table("operators") as operators:
        operators.drop_constraint(op.f("ck_operators_role"), type_="check")
        operators.create_check_constraint("role", "role IN ('admin', 'analyst')")
    with op.batch_alter_table("blocks") as blocks:
        blocks.drop_column("approved_by")
        blocks.drop_column("approved_at")
        blocks.drop_column("loaded_by")
