"""Double-entry ledger: each movement is one transaction whose entries sum to zero."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import BigInteger, Insert, Integer, String, bindparam, insert, select, update
from sqlalchemy.orm import Session

from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import Account, LedgerEntry, LedgerTransaction
from pharaon.store.types import UTCDateTime

Entries = Sequence[tuple[int, int]]  # (account id, cents)


# Built once: posting is on the path of every purchase, a batch's rows in one parameter. The
# transactions are alike, so their ids need not come back in the rows' order.
def _insert_transactions_sql(sql: Parts) -> Insert:
    new = sql.rows("new", kind=String())
    return (
        insert(LedgerTransaction)
        .from_select(
            ["kind", "created_at"], select(new.c.kind, bindparam("now", type_=UTCDateTime()))
        )
        .returning(LedgerTransaction.id)
    )


def _insert_entries_sql(sql: Parts) -> Insert:
    entries = sql.rows(
        "entries", transaction_id=Integer(), account_id=Integer(), amount_cents=BigInteger()
    )
    return insert(LedgerEntry).from_select(
        ["transaction_id", "account_id", "amount_cents"],
        select(entries.c.transaction_id, entries.c.account_id, entries.c.amount_cents),
    )


_INSERT_TRANSACTIONS = PerDialect(_insert_transactions_sql)
_INSERT_ENTRIES = PerDialect(_insert_entries_sql)
_ADD = (
    update(Account)
    .where(Account.id == bindparam("account"))
    .values(balance_cents=Account.balance_cents + bindparam("amount"))
)


def post(
    session: Session,
    *,
    kind: str,
    entries: Entries,
    now: datetime,
    settled: frozenset[int] = frozenset(),
) -> int:
    """Record ``entries`` (account id, cents) as one transaction; returns its id.

    Each account's balance moves by its entries, except the accounts in ``settled``, whose
    balance the caller has already moved in this transaction (with its own guard, such as
    funds). Operator accounts are updated in id order so concurrent movements never deadlock.
    """
    (transaction_id,) = post_many(session, kind=kind, movements=[entries], now=now, settled=settled)
    return transaction_id


def post_many(
    session: Session,
    *,
    kind: str,
    movements: Sequence[Entries],
    now: datetime,
    settled: frozenset[int] = frozenset(),
) -> list[int]:
    """Record each of ``movements`` as one transaction; their ids, in order.

    As :func:`post`, with one insert per table and one balance update for all of them: the
    accounts outside ``settled`` (the operator's, which every purchase moves) are locked once.
    """
    for entries in movements:
        if sum(amount for _, amount in entries) != 0:
            raise ValueError(f"ledger entries must sum to zero, got {list(entries)}")
    if not movements:
        return []
    connection = session.connection()
    ids = sorted(
        int(row[0])
        for row in connection.execute(
            _INSERT_TRANSACTIONS.on(connection),
            {"new": [{"kind": kind}] * len(movements), "now": now},
        )
    )
    rows = [
        {"transaction_id": transaction_id, "account_id": account, "amount_cents": amount}
        for transaction_id, entries in zip(ids, movements, strict=True)
        for account, amount in entries
        if amount
    ]
    if rows:
        connection.execute(_INSERT_ENTRIES.on(connection), {"entries": rows})
    moves: dict[int, int] = {}
    for entries in movements:
        for account, amount in entries:
            if account not in settled:
                moves[account] = moves.get(account, 0) + amount
    move(session, amounts=moves)
    return ids


def move(session: Session, *, amounts: dict[int, int]) -> None:
    """Add ``amounts`` (cents by account id; zeros skipped) to the balances, in account id
    order as every writer locks them. Entries are the caller's: :func:`post_many` and a
    purchase that moves its buyers' balances under its own guards."""
    rows = [{"account": a, "amount": amounts[a]} for a in sorted(amounts) if amounts[a]]
    if rows:
        session.connection().execute(_ADD, rows)
