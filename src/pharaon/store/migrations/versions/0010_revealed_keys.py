"""Keys revealed at close (service/revealed_keys.py).

``revealed_keys``: the vendor's and the operator's keys of a block, published once the block
and every other block the same pair made are closed (sold out or deactivated); a key is
stored only then, when it is no longer a secret, and only if its SHA-256 is the manifest's
commitment.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "revealed_keys",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("vendor_key", sa.String(length=128), nullable=False),
        sa.Column("operator_key", sa.String(length=128), nullable=False),
        sa.Column("revealed_at", UTCDateTime(), nullable=False),
        sa.Column("revealed_by", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["block_id"], ["blocks.id"], name=op.f("fk_revealed_keys_block_id_blocks")
        ),
        sa.PrimaryKeyConstraint("block_id", name=op.f("pk_revealed_keys")),
    )


def downgrade() -> None:
    op.drop_table("revealed_keys")
