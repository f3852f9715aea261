"""Player protection and operators' secrets.

- Loss limit per 7 days: a row of ``deposit_limits`` of period ``loss`` (no schema change);
  ``pharaon_sell`` is replaced by migration 0004's function with one more step, the loss check
  (the Python path, ``service/sales.py``, does the same: ``tests/service/test_loss_limit.py``),
  and ``ix_plays_player_time`` serves its query (the player's plays of the last 7 days).
- ``players.reality_check_minutes``: the player's reality-check interval (None: off).
- ``operators.totp_secret`` is widened to hold the secret sealed with AES-GCM (``aesgcm:``
  prefix, ``service/sealing.py``). Rows written before stay readable in clear and are sealed at
  the operator's next log-in (the key file is the server's, not the migration's).
- Operators' failed log-ins share ``login_failures`` with the players', under keys that no
  player's email or address can take (``service/accounts.py``): no schema change.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

from __future__ import annotations

import importlib

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_BEFORE = importlib.import_module("pharaon.store.migrations.versions.0004_proofs")
SIGNATURE = _BEFORE.SIGNATURE

# After the buyers' accounts are locked and before their stakes are debited: an order whose
# stake would take the player's net loss of the last 7 days past the loss limit in force is
# refused ('loss_limit'), its key given back. As service/limits.py's losses().
_ANCHOR = (
    "        PERFORM 1 FROM accounts AS a WHERE a.player_id = ANY (v_buyers) ORDER BY a.id "
    "FOR UPDATE;\n"
)
_LOSS_CHECK = r"""        FOR r IN
            SELECT w.i,
                   CASE WHEN l.pending_effective_at IS NOT NULL
                             AND l.pending_effective_at <= p_now
                        THEN l.pending_cents ELSE l.amount_cents END AS lim,
                   (SELECT coalesce(sum(pl.stake_cents - CASE
                               WHEN pl.mode = 'auto' OR pl.revealed = 15 THEN pl.prize_cents
                               ELSE 0 END), 0)
                    FROM plays AS pl
                    WHERE pl.player_id = l.player_id
                      AND pl.created_at > p_now - interval '7 days') AS loss
            FROM generate_subscripts(p_players, 1) AS w(i)
            JOIN deposit_limits AS l ON l.player_id = p_players[w.i] AND l.period = 'loss'
            WHERE o_outcome[w.i] IS NULL
        LOOP
            IF r.lim IS NOT NULL AND r.loss + p_stakes[r.i] > r.lim THEN
                o_outcome[r.i] := 'loss_limit';
                v_released := v_released || o_key[r.i];
            END IF;
        END LOOP;
"""
if _BEFORE.SELL.count(_ANCHOR) != 1:
    raise RuntimeError("migration 0004's pharaon_sell no longer has the line the check follows")
SELL = _BEFORE.SELL.replace(_ANCHOR, _ANCHOR + _LOSS_CHECK)


def upgrade() -> None:
    with op.batch_alter_table("players") as batch:
        batch.add_column(sa.Column("reality_check_minutes", sa.SmallInteger(), nullable=True))
    with op.batch_alter_table("operators") as batch:
        batch.alter_column(
            "totp_secret", existing_type=sa.String(length=64), type_=sa.String(length=200)
        )
    op.create_index("ix_plays_player_time", "plays", ["player_id", "created_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(SELL)
        op.execute(f"ALTER FUNCTION {SIGNATURE} SET enable_seqscan = off")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_BEFORE.SELL)
        op.execute(f"ALTER FUNCTION {SIGNATURE} SET enable_seqscan = off")
    op.drop_index("ix_plays_player_time", table_name="plays")
    with op.batch_alter_table("operators") as batch:
        batch.alter_column(
            "totp_secret", existing_type=sa.String(length=200), type_=sa.String(length=64)
        )
    with op.batch_alter_table("players") as batch:
        batch.drop_column("reality_check_minutes")
