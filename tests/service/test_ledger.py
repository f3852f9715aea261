"""The double-entry ledger (service/ledger.py), on both databases: each movement one transaction
whose entries sum to zero, the balances moved by them (but those the caller settled), and a
player's balance never below zero."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, Engine, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pharaon.service import ledger
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    CASH_ACCOUNT,
    PRIZES_ACCOUNT,
    SALES_ACCOUNT,
    Account,
    LedgerEntry,
    LedgerTransaction,
)
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player


def _account(db: Transactions, player_id: int) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(Account.id).where(Account.player_id == player_id)
            ).scalar_one()
        )
    )


def _balances(db: Transactions, *accounts: int) -> list[int]:
    def read(connection: Connection) -> list[int]:
        found = {
            int(a): int(b)
            for a, b in connection.execute(
                select(Account.id, Account.balance_cents).where(Account.id.in_(accounts))
            )
        }
        return [found[a] for a in accounts]

    return db.read(read)


def _entries(db: Transactions, transaction_id: int) -> list[tuple[int, int]]:
    return db.read(
        lambda connection: sorted(
            (int(a), int(c))
            for a, c in connection.execute(
                select(LedgerEntry.account_id, LedgerEntry.amount_cents).where(
                    LedgerEntry.transaction_id == transaction_id
                )
            )
        )
    )


def _count(db: Transactions, table: type[LedgerTransaction] | type[LedgerEntry]) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(select(func.count()).select_from(table)).scalar_one()
        )
    )


def _audit_failures(db: Transactions) -> list[str]:
    return db.read(lambda connection: run_audit(connection=connection).failures)


def test_post_records_one_balanced_transaction_and_moves_the_balances(
    engine: Engine, db: Transactions
) -> None:
    player = _account(db, funded_player(make_sessionmaker(engine), "ana", 1_000))
    cash, sales = _balances(db, CASH_ACCOUNT, SALES_ACCOUNT)
    now = utcnow()
    transaction_id = db.write(
        ledger.post,
        kind="purchase",
        entries=[(player, -300), (SALES_ACCOUNT, 300)],
        now=now,
    )
    assert _entries(db, transaction_id) == sorted([(player, -300), (SALES_ACCOUNT, 300)])
    assert _balances(db, player, CASH_ACCOUNT, SALES_ACCOUNT) == [700, cash, sales + 300]
    kind, created_at = db.read(
        lambda connection: connection.execute(
            select(LedgerTransaction.kind, LedgerTransaction.created_at).where(
                LedgerTransaction.id == transaction_id
            )
        ).one()
    )
    assert (kind, created_at) == ("purchase", now)
    assert _audit_failures(db) == []


@pytest.mark.parametrize(
    "entries",
    [[(CASH_ACCOUNT, -100), (SALES_ACCOUNT, 99)], [(SALES_ACCOUNT, 1)]],
)
def test_entries_that_do_not_sum_to_zero_are_refused_before_any_write(
    engine: Engine, db: Transactions, entries: list[tuple[int, int]]
) -> None:
    funded_player(make_sessionmaker(engine), "ana", 1_000)
    transactions, rows = _count(db, LedgerTransaction), _count(db, LedgerEntry)
    balances = _balances(db, CASH_ACCOUNT, SALES_ACCOUNT)
    with pytest.raises(ValueError, match="must sum to zero"):
        db.write(ledger.post, kind="deposit", entries=entries, now=utcnow())
    # One bad movement among good ones refuses them all.
    with pytest.raises(ValueError, match="must sum to zero"):
        db.write(
            ledger.post_many,
            kind="deposit",
            movements=[[(CASH_ACCOUNT, -5), (SALES_ACCOUNT, 5)], entries],
            now=utcnow(),
        )
    assert (_count(db, LedgerTransaction), _count(db, LedgerEntry)) == (transactions, rows)
    assert _balances(db, CASH_ACCOUNT, SALES_ACCOUNT) == balances


def test_post_many_one_transaction_per_movement_in_order(engine: Engine, db: Transactions) -> None:
    sessions = make_sessionmaker(engine)
    ana = _account(db, funded_player(sessions, "ana", 1_000))
    bob = _account(db, funded_player(sessions, "bob", 500))
    sales, prizes = _balances(db, SALES_ACCOUNT, PRIZES_ACCOUNT)
    movements = [
        [(ana, -100), (SALES_ACCOUNT, 100)],
        [(bob, -200), (SALES_ACCOUNT, 200), (PRIZES_ACCOUNT, -900), (bob, 900)],
        [(ana, -100), (SALES_ACCOUNT, 100), (PRIZES_ACCOUNT, 0), (ana, 0)],  # zeros: no entry
    ]
    ids = db.write(ledger.post_many, kind="purchase", movements=movements, now=utcnow())
    assert len(ids) == 3
    assert ids == sorted(set(ids))
    for transaction_id, entries in zip(ids, movements, strict=True):
        assert _entries(db, transaction_id) == sorted((a, c) for a, c in entries if c)
    assert _balances(db, ana, bob, SALES_ACCOUNT, PRIZES_ACCOUNT) == [
        800,
        1_200,
        sales + 400,
        prizes - 900,
    ]
    assert db.write(ledger.post_many, kind="purchase", movements=[], now=utcnow()) == []
    assert _audit_failures(db) == []


def test_settled_accounts_get_their_entries_but_keep_their_balance(
    engine: Engine, db: Transactions
) -> None:
    """The caller that moved an account itself (under its own guard) names it ``settled``: it
    is not moved twice."""
    player = _account(db, funded_player(make_sessionmaker(engine), "ana", 1_000))
    (cash,) = _balances(db, CASH_ACCOUNT)

    def deposit(session: Session) -> int:
        ledger.move(session, amounts={player: 250})
        return ledger.post(
            session,
            kind="deposit",
            entries=[(CASH_ACCOUNT, -250), (player, 250)],
            now=utcnow(),
            settled=frozenset({player}),
        )

    transaction_id = db.write(deposit)
    assert _entries(db, transaction_id) == sorted([(CASH_ACCOUNT, -250), (player, 250)])
    assert _balances(db, player, CASH_ACCOUNT) == [1_250, cash - 250]
    assert _audit_failures(db) == []
    # Named settled without having been moved: its balance is now off its entries.
    db.write(
        ledger.post,
        kind="deposit",
        entries=[(CASH_ACCOUNT, -1), (player, 1)],
        now=utcnow(),
        settled=frozenset({player}),
    )
    assert _balances(db, player) == [1_250]
    [failure] = _audit_failures(db)
    assert failure.startswith(f"balances equal ledgers: account {player}")


def test_move_adds_to_the_balances_and_skips_zeros(engine: Engine, db: Transactions) -> None:
    sessions = make_sessionmaker(engine)
    ana = _account(db, funded_player(sessions, "ana", 100))
    bob = _account(db, funded_player(sessions, "bob", 100))
    db.write(ledger.move, amounts={bob: -40, ana: 15, SALES_ACCOUNT: 0})
    assert _balances(db, ana, bob) == [115, 60]
    db.write(ledger.move, amounts={})
    assert _balances(db, ana, bob) == [115, 60]


def test_a_player_s_balance_never_goes_below_zero(engine: Engine, db: Transactions) -> None:
    player = _account(db, funded_player(make_sessionmaker(engine), "ana", 100))
    transactions = _count(db, LedgerTransaction)
    with pytest.raises(IntegrityError):
        db.write(
            ledger.post,
            kind="purchase",
            entries=[(player, -101), (SALES_ACCOUNT, 101)],
            now=utcnow(),
        )
    assert _balances(db, player) == [100]
    assert _count(db, LedgerTransaction) == transactions  # the whole transaction rolled back
