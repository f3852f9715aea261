"""Double-entry ledger: each movement is one transaction whose entries sum to zero."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import case, insert, update
from sqlalchemy.orm import Session

from pharaon.store.tables import Account, LedgerEntry, LedgerTransaction


def post(
    session: Session,
    *,
    kind: str,
    entries: Sequence[tuple[int, int]],
    now: datetime,
    settled: frozenset[int] = frozenset(),
) -> int:
    """Record ``entries`` (account id, cents) as one transaction; returns its id.

    Each account's balance moves by its entries, except the accounts in ``settled``, whose
    balance the caller has already moved in this transaction (with its own guard, such as
    funds). Operator accounts are updated in id order so concurrent movements never deadlock.
    """
    if sum(amount for _, amount in entries) != 0:
        raise ValueError(f"ledger entries must sum to zero, got {list(entries)}")
    transaction_id = session.execute(
        insert(LedgerTransaction).values(kind=kind, created_at=now).returning(LedgerTransaction.id)
    ).scalar_one()
    session.execute(
        insert(LedgerEntry),
        [
            {"transaction_id": transaction_id, "account_id": account, "amount_cents": amount}
            for account, amount in entries
            if amount
        ],
    )
    moves: dict[int, int] = {}
    for account, amount in entries:
        if account not in settled:
            moves[account] = moves.get(account, 0) + amount
    moves = {a: m for a, m in moves.items() if m}
    if moves:
        # One statement; PostgreSQL locks the rows in index (id) order, as every writer does.
        session.execute(
            update(Account)
            .where(Account.id.in_(sorted(moves)))
            .values(balance_cents=Account.balance_cents + case(moves, value=Account.id, else_=0))
        )
    return int(transaction_id)
