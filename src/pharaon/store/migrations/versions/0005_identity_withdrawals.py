"""A player's identity, checked by an operator (the account stays provisional until then), and
withdrawals to the IBAN given at that check, through two new operator accounts.

``players.verified_at``: when the identity was checked (None: provisional);
``players.identity_suspended_at``: the suspension the hourly chore put on an account left
provisional too long (lifted by the check if it is still that one). ``identity_checks``: what
the operator saw. ``withdrawals``: one row a withdrawal, its state and its ledger transactions.
Accounts -1 (``withdrawals``: asked, not yet paid or given back) and -2 (``paid_out``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_NEW_ACCOUNTS = {-1: "withdrawals", -2: "paid_out"}


def upgrade() -> None:
    with op.batch_alter_table("players") as players:
        players.add_column(sa.Column("verified_at", UTCDateTime(), nullable=True))
        players.add_column(sa.Column("identity_suspended_at", UTCDateTime(), nullable=True))
    op.create_table(
        "identity_checks",
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("operator_id", sa.Integer(), nullable=False),
        sa.Column("document_kind", sa.String(length=16), nullable=False),
        sa.Column("document_ref", sa.String(length=40), nullable=False),
        sa.Column("last_name", sa.String(length=100), nullable=False),
        sa.Column("first_names", sa.String(length=200), nullable=False),
        sa.Column("birth_date", sa.Date(), nullable=False),
        sa.Column("iban", sa.String(length=34), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "document_kind IN ('id_card', 'passport', 'residence_permit')",
            name=op.f("ck_identity_checks_known_document"),
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_identity_checks_operator_id_operators"),
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_identity_checks_player_id_players")
        ),
        sa.PrimaryKeyConstraint("player_id", name=op.f("pk_identity_checks")),
    )
    op.create_table(
        "withdrawals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.Integer(), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("iban", sa.String(length=34), nullable=False),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("requested_at", UTCDateTime(), nullable=False),
        sa.Column("request_transaction_id", sa.Integer(), nullable=False),
        sa.Column("decided_at", UTCDateTime(), nullable=True),
        sa.Column("decision_transaction_id", sa.Integer(), nullable=True),
        sa.Column("operator_id", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_withdrawals_positive")),
        sa.CheckConstraint(
            "state IN ('requested', 'paid', 'rejected')", name=op.f("ck_withdrawals_known_state")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_withdrawals_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_withdrawals_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["request_transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_withdrawals_request_transaction_id_ledger_transactions"),
        ),
        sa.ForeignKeyConstraint(
            ["decision_transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_withdrawals_decision_transaction_id_ledger_transactions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_withdrawals")),
    )
    op.create_index("ix_withdrawals_player", "withdrawals", ["player_id", "id"], unique=False)
    op.create_index(
        "ix_withdrawals_requested",
        "withdrawals",
        ["id"],
        unique=False,
        sqlite_where=sa.text("state = 'requested'"),
        postgresql_where=sa.text("state = 'requested'"),
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
            for id_, kind in _NEW_ACCOUNTS.items()
        ],
    )


def downgrade() -> None:
    op.drop_index("ix_withdrawals_requested", table_name="withdrawals")
    op.drop_index("ix_withdrawals_player", table_name="withdrawals")
    op.drop_table("withdrawals")
    op.drop_table("identity_checks")
    # Refused by the ledger's foreign keys once a withdrawal moved money: nothing is lost.
    op.execute(sa.text("DELETE FROM accounts WHERE id IN (-1, -2)"))
    with op.batch_alter_table("players") as players:
        players.drop_column("identity_suspended_at")
        players.drop_column("verified_at")
