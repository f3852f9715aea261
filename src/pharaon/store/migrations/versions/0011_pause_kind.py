"""What a player's pause is: a cool-off (``cool_off``, 24 hours to 7 days) or a self-exclusion
(``self_exclusion``), so that the page and every refusal call it by its name
(``players.pause_kind``, beside ``self_excluded_until``). A pause taken before this revision
is counted a self-exclusion, as it was told until then.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.add_column(sa.Column("pause_kind", sa.String(length=16), nullable=True))
        players.create_check_constraint(
            "known_pause", "pause_kind IN ('cool_off', 'self_exclusion')"
        )
    op.execute(
        "UPDATE players SET pause_kind = 'self_exclusion' WHERE self_excluded_until IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.drop_constraint("known_pause", type_="check")
        players.drop_column("pause_kind")
