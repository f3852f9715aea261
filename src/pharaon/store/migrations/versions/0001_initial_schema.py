"""The schema: players and sessions, the ledger, blocks and their units, plays, the audit log,
operators.

One initial revision: the earlier ones were squashed before any production database existed.

Revision ID: 0001
Revises:
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The operator's accounts, with fixed ids (store/tables.py), and the audit chain's empty head.
OPERATOR_ACCOUNTS = {0: "pending", 1: "cash", 2: "sales", 3: "prizes"}
GENESIS_HASH = "0" * 64


def upgrade() -> None:
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("taken_at", UTCDateTime(), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_checkpoints")),
    )
    op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_head")),
    )
    op.create_table(
        "audit_log",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("actor", sa.String(length=80), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_sha256", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audit_log")),
    )
    op.create_table(
        "blocks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=40), nullable=False),
        sa.Column("emission", sa.String(length=40), nullable=False),
        sa.Column("price_cents", sa.Integer(), nullable=False),
        sa.Column("block_number", sa.Integer(), nullable=False),
        sa.Column("block_size", sa.Integer(), nullable=False),
        sa.Column("is_test", sa.Boolean(), nullable=False),
        sa.Column("units_sha256", sa.String(length=64), nullable=False),
        sa.Column("merkle_root", sa.String(length=128), nullable=False),
        sa.Column("manifest_json", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("loaded_at", UTCDateTime(), nullable=False),
        sa.Column("deactivated_at", UTCDateTime(), nullable=True),
        sa.Column("deactivation_reason", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "state IN ('loaded', 'open', 'sold_out', 'deactivated')",
            name=op.f("ck_blocks_known_state"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_blocks")),
        sa.UniqueConstraint("game", "emission", "price_cents", "block_number", name="uq_blocks_id"),
        sa.UniqueConstraint("units_sha256", name=op.f("uq_blocks_units_sha256")),
    )
    op.create_index(
        "uq_blocks_open_price",
        "blocks",
        ["price_cents"],
        unique=True,
        sqlite_where=sa.text("state = 'open'"),
        postgresql_where=sa.text("state = 'open'"),
    )
    op.create_table(
        "ledger_transactions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_transactions")),
    )
    op.create_table(
        "login_failures",
        sa.Column("key", sa.String(length=254), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_login_failures")),
    )
    op.create_table(
        "operators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("totp_secret", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_totp_step", sa.BigInteger(), nullable=True),
        sa.CheckConstraint("role IN ('admin', 'analyst')", name=op.f("ck_operators_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
        sa.UniqueConstraint("email", name=op.f("uq_operators_email")),
    )
    op.create_table(
        "players",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("birth_date", sa.Date(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("self_excluded_until", UTCDateTime(), nullable=True),
        sa.Column("closed_at", UTCDateTime(), nullable=True),
        sa.Column("reality_check_minutes", sa.SmallInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_players")),
        sa.UniqueConstraint("email", name=op.f("uq_players_email")),
    )
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=True),
        sa.Column("balance_cents", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "kind <> 'player' OR balance_cents >= 0", name=op.f("ck_accounts_funded")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_accounts_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("player_id", name=op.f("uq_accounts_player_id")),
    )
    op.create_table(
        "block_prizes",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("lot_cents", sa.BigInteger(), nullable=False),
        sa.Column("units", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["block_id"], ["blocks.id"], name=op.f("fk_block_prizes_block_id_blocks")
        ),
        sa.PrimaryKeyConstraint("block_id", "lot_cents", name=op.f("pk_block_prizes")),
    )
    op.create_table(
        "sale_runs",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("run", sa.SmallInteger(), nullable=False),
        sa.Column("first_serial", sa.Integer(), nullable=False),
        sa.Column("last_serial", sa.Integer(), nullable=False),
        sa.Column("next_serial", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "next_serial BETWEEN first_serial AND last_serial + 1",
            name=op.f("ck_sale_runs_serial_in_run"),
        ),
        sa.ForeignKeyConstraint(
            ["block_id"], ["blocks.id"], name=op.f("fk_sale_runs_block_id_blocks")
        ),
        sa.PrimaryKeyConstraint("block_id", "run", name=op.f("pk_sale_runs")),
    )
    op.create_table(
        "deposit_limits",
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("pending_cents", sa.BigInteger(), nullable=True),
        sa.Column("pending_effective_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_deposit_limits_player_id_players")
        ),
        sa.PrimaryKeyConstraint("player_id", "period", name=op.f("pk_deposit_limits")),
    )
    op.create_table(
        "deposits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_after_cents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("transaction_id", sa.Integer(), nullable=False),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_deposits_positive")),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_deposits_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_deposits_transaction_id_ledger_transactions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deposits")),
    )
    op.create_index(
        "ix_deposits_player_time", "deposits", ["player_id", "created_at"], unique=False
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_idempotency_keys_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("player_id", "key", name="uq_idempotency_player_key"),
    )
    op.create_table(
        "merkle_chunks",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("hashes", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["block_id"], ["blocks.id"], name=op.f("fk_merkle_chunks_block_id_blocks")
        ),
        sa.PrimaryKeyConstraint("block_id", "level", "chunk", name=op.f("pk_merkle_chunks")),
    )
    op.create_table(
        "plays",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("serial", sa.Integer(), nullable=False),
        sa.Column("stake_cents", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(length=8), nullable=False),
        sa.Column("prize_cents", sa.BigInteger(), nullable=False),
        sa.Column("revealed", sa.SmallInteger(), nullable=False),
        sa.Column("balance_before_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_after_cents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["block_id"], ["blocks.id"], name=op.f("fk_plays_block_id_blocks")),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_plays_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_plays_transaction_id_ledger_transactions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plays")),
        sa.UniqueConstraint("block_id", "serial", name="uq_plays_unit"),
    )
    op.create_index("ix_plays_block_prize", "plays", ["block_id", "prize_cents"], unique=False)
    op.create_index("ix_plays_player_id", "plays", ["player_id", "id"], unique=False)
    op.create_index("ix_plays_player_time", "plays", ["player_id", "created_at"], unique=False)
    op.create_index(
        "ix_plays_unfinished",
        "plays",
        ["block_id", "prize_cents"],
        unique=False,
        sqlite_where=sa.text("mode = 'jouer' AND revealed <> 15"),
        postgresql_where=sa.text("mode = 'jouer' AND revealed <> 15"),
    )
    op.create_table(
        "sessions",
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=True),
        sa.Column("operator_id", sa.Integer(), nullable=True),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "(player_id IS NULL) <> (operator_id IS NULL)", name=op.f("ck_sessions_one_holder")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_sessions_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_sessions_player_id_players")
        ),
        sa.PrimaryKeyConstraint("token_sha256", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_operator_id"), "sessions", ["operator_id"], unique=False)
    op.create_index(op.f("ix_sessions_player_id"), "sessions", ["player_id"], unique=False)
    op.create_table(
        "units",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("serial", sa.Integer(), nullable=False),
        sa.Column("cells", sa.LargeBinary(length=64), nullable=False),
        sa.Column("lot_cents", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["block_id"], ["blocks.id"], name=op.f("fk_units_block_id_blocks")),
        sa.PrimaryKeyConstraint("block_id", "serial", name=op.f("pk_units")),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("transaction_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_ledger_entries_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_ledger_entries_transaction_id_ledger_transactions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_entries")),
    )
    op.create_index(
        op.f("ix_ledger_entries_account_id"), "ledger_entries", ["account_id"], unique=False
    )
    op.create_index(
        op.f("ix_ledger_entries_transaction_id"), "ledger_entries", ["transaction_id"], unique=False
    )

    accounts = sa.table(
        "accounts",
        sa.column("id", sa.Integer()),
        sa.column("kind", sa.String()),
        sa.column("player_id", sa.Integer()),
        sa.column("balance_cents", sa.BigInteger()),
    )
    op.bulk_insert(
        accounts,
        [
            {"id": id_, "kind": kind, "player_id": None, "balance_cents": 0}
            for id_, kind in OPERATOR_ACCOUNTS.items()
        ],
    )
    if op.get_bind().dialect.name == "postgresql":
        # The players' accounts take the ids after the operator's.
        op.execute(
            f"SELECT setval(pg_get_serial_sequence('accounts', 'id'), {max(OPERATOR_ACCOUNTS)})"
        )
    head = sa.table(
        "audit_head",
        sa.column("id", sa.Integer()),
        sa.column("seq", sa.Integer()),
        sa.column("sha256", sa.String()),
    )
    op.bulk_insert(head, [{"id": 1, "seq": 0, "sha256": GENESIS_HASH}])
    _append_only("audit_log")


def _append_only(table: str) -> None:
    """Refuse UPDATE and DELETE on ``table`` in the database itself."""
    if op.get_bind().dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )
    else:
        op.execute(
            f"CREATE FUNCTION {table}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN RAISE EXCEPTION '{table} is append-only'; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {table}_append_only()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_log_append_only ON audit_log")
        op.execute("DROP FUNCTION IF EXISTS audit_log_append_only()")
    op.drop_index(op.f("ix_ledger_entries_transaction_id"), table_name="ledger_entries")
    op.drop_index(op.f("ix_ledger_entries_account_id"), table_name="ledger_entries")
    op.drop_table("ledger_entries")
    op.drop_table("units")
    op.drop_index(op.f("ix_sessions_player_id"), table_name="sessions")
    op.drop_index(op.f("ix_sessions_operator_id"), table_name="sessions")
    op.drop_table("sessions")
    op.drop_index(
        "ix_plays_unfinished",
        table_name="plays",
        sqlite_where=sa.text("mode = 'jouer' AND revealed <> 15"),
        postgresql_where=sa.text("mode = 'jouer' AND revealed <> 15"),
    )
    op.drop_index("ix_plays_player_time", table_name="plays")
    op.drop_index("ix_plays_player_id", table_name="plays")
    op.drop_index("ix_plays_block_prize", table_name="plays")
    op.drop_table("plays")
    op.drop_table("merkle_chunks")
    op.drop_table("idempotency_keys")
    op.drop_index("ix_deposits_player_time", table_name="deposits")
    op.drop_table("deposits")
    op.drop_table("deposit_limits")
    op.drop_table("sale_runs")
    op.drop_table("block_prizes")
    op.drop_table("accounts")
    op.drop_table("players")
    op.drop_table("operators")
    op.drop_table("login_failures")
    op.drop_table("ledger_transactions")
    op.drop_index(
        "uq_blocks_open_price",
        table_name="blocks",
        sqlite_where=sa.text("state = 'open'"),
        postgresql_where=sa.text("state = 'open'"),
    )
    op.drop_table("blocks")
    op.drop_table("audit_log")
    op.drop_table("audit_head")
    op.drop_table("audit_checkpoints")
