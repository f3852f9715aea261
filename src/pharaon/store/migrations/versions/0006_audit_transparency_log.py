"""The audit log as a transparency log: its Merkle tree kept level by level, each checkpoint's
root, and the witnesses' cosignatures.

``audit_tree``: the complete nodes of each level of the RFC 6962 tree over the audit records,
256 a row; ``audit_tree_head``: how many records it covers (0 here: the server's chores build
it from the log at their first look); ``audit_checkpoints.root``: the root at the checkpoint's
``seq`` (filled then for the checkpoints taken before); ``audit_cosignatures``: what witnesses
cosigned.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit_checkpoints") as checkpoints:
        checkpoints.add_column(sa.Column("root", sa.String(length=64), nullable=True))
    op.create_table(
        "audit_tree_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_tree_head")),
    )
    op.create_table(
        "audit_tree",
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("hashes", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("level", "chunk", name=op.f("pk_audit_tree")),
    )
    op.create_table(
        "audit_cosignatures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tree_size", sa.Integer(), nullable=False),
        sa.Column("root", sa.String(length=64), nullable=False),
        sa.Column("witness", sa.String(length=200), nullable=False),
        sa.Column("key_id", sa.String(length=8), nullable=False),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("cosigned_at", UTCDateTime(), nullable=False),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_cosignatures")),
        sa.UniqueConstraint("tree_size", "witness", "key_id", name="uq_audit_cosignatures_witness"),
    )
    head = sa.table("audit_tree_head", sa.column("id", sa.Integer()), sa.column("size"))
    op.bulk_insert(head, [{"id": 1, "size": 0}])


def downgrade() -> None:
    op.drop_table("audit_cosignatures")
    op.drop_table("audit_tree")
    op.drop_table("audit_tree_head")
    with op.batch_alter_table("audit_checkpoints") as checkpoints:
        checkpoints.drop_column("root")
