"""Deposits and balances (service/wallet.py), on both databases: a deposit credits the player
from the cash account once per idempotency key, in the ledger and the audit log; a refused one
changes nothing and gives its key back."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import Connection, Engine, select

from pharaon.service import limits, wallet
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    BadRequestError,
    DepositLimitReachedError,
    IdempotencyConflictError,
    InvalidError,
    SelfExcludedError,
)
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    CASH_ACCOUNT,
    Account,
    AuditRecord,
    Deposit,
    IdempotencyKey,
    LedgerEntry,
)
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player


def _new_player(engine: Engine, name: str = "ana") -> int:
    return funded_player(make_sessionmaker(engine), name, 0)


def _deposit(
    db: Transactions, player_id: int, amount_cents: int, key: str | None, hours: float = 0
) -> wallet.DepositResult:
    return db.write(
        wallet.deposit,
        player_id=player_id,
        amount_cents=amount_cents,
        idempotency_key=key,
        now=utcnow() + timedelta(hours=hours),
    )


def _balance(db: Transactions, player_id: int) -> int:
    return db.write(wallet.balance, player_id=player_id)


def _cash(db: Transactions) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(
                select(Account.balance_cents).where(Account.id == CASH_ACCOUNT)
            ).scalar_one()
        )
    )


def _deposits(db: Transactions, player_id: int) -> list[tuple[int, int]]:
    return db.read(
        lambda connection: [
            (int(a), int(b))
            for a, b in connection.execute(
                select(Deposit.amount_cents, Deposit.balance_after_cents)
                .where(Deposit.player_id == player_id)
                .order_by(Deposit.id)
            )
        ]
    )


def test_a_deposit_credits_the_player_from_the_cash_account(
    engine: Engine, db: Transactions
) -> None:
    ana = _new_player(engine)
    cash = _cash(db)
    first = _deposit(db, ana, 1_250, "one")
    second = _deposit(db, ana, 50, "two")
    assert (first.amount_cents, first.balance_cents) == (1_250, 1_250)
    assert (second.amount_cents, second.balance_cents) == (50, 1_300)
    assert second.deposit_id != first.deposit_id
    assert _balance(db, ana) == 1_300
    assert _cash(db) == cash - 1_300
    assert _deposits(db, ana) == [(1_250, 1_250), (50, 1_300)]

    def trail(connection: Connection) -> tuple[list[tuple[int, int]], list[dict[str, int]]]:
        transaction_id = connection.execute(
            select(Deposit.transaction_id).where(Deposit.id == second.deposit_id)
        ).scalar_one()
        entries = sorted(
            (int(a), int(c))
            for a, c in connection.execute(
                select(LedgerEntry.account_id, LedgerEntry.amount_cents).where(
                    LedgerEntry.transaction_id == transaction_id
                )
            )
        )
        records = [
            json.loads(p)
            for p in connection.execute(
                select(AuditRecord.payload)
                .where(AuditRecord.kind == "deposit", AuditRecord.actor == f"player:{ana}")
                .order_by(AuditRecord.seq)
            ).scalars()
        ]
        return entries, records

    entries, records = db.read(trail)
    account = db.read(
        lambda connection: int(
            connection.execute(select(Account.id).where(Account.player_id == ana)).scalar_one()
        )
    )
    assert entries == sorted([(CASH_ACCOUNT, -50), (account, 50)])
    assert [(r["deposit_id"], r["amount_cents"]) for r in records] == [
        (first.deposit_id, 1_250),
        (second.deposit_id, 50),
    ]
    assert db.read(lambda connection: run_audit(connection=connection).failures) == []


def test_a_retried_deposit_is_credited_once(engine: Engine, db: Transactions) -> None:
    ana = _new_player(engine)
    first = _deposit(db, ana, 700, "same")
    _deposit(db, ana, 100, "later")
    retry = _deposit(db, ana, 700, "same")
    # The retry answers what the first answered, the balance of then included.
    assert retry == first
    assert _balance(db, ana) == 800
    with pytest.raises(IdempotencyConflictError):
        _deposit(db, ana, 701, "same")
    assert _balance(db, ana) == 800
    assert _deposits(db, ana) == [(700, 700), (100, 800)]


@pytest.mark.parametrize(
    ("amount", "key", "refusal"),
    [
        (0, "k", InvalidError),
        (-100, "k", InvalidError),
        (wallet.MAX_DEPOSIT_CENTS + 1, "k", InvalidError),
        (100, None, BadRequestError),
        (100, " ", BadRequestError),
    ],
)
def test_a_malformed_deposit_is_refused(
    engine: Engine, db: Transactions, amount: int, key: str | None, refusal: type[Exception]
) -> None:
    ana = _new_player(engine)
    with pytest.raises(refusal):
        _deposit(db, ana, amount, key)
    assert _balance(db, ana) == 0
    assert _deposits(db, ana) == []


def test_the_largest_deposit_is_accepted(engine: Engine, db: Transactions) -> None:
    ana = _new_player(engine)
    cash = _cash(db)
    assert _deposit(db, ana, wallet.MAX_DEPOSIT_CENTS, "max").balance_cents == 100_000_000
    assert _cash(db) == cash - 100_000_000


def test_a_refused_deposit_changes_nothing_and_frees_its_key(
    engine: Engine, db: Transactions
) -> None:
    ana = _new_player(engine)
    db.write(limits.self_exclude, player_id=ana, days=1, now=utcnow())
    cash = _cash(db)
    with pytest.raises(SelfExcludedError):
        _deposit(db, ana, 500, "k")
    assert (_balance(db, ana), _cash(db), _deposits(db, ana)) == (0, cash, [])
    keys = db.read(
        lambda connection: connection.execute(
            select(IdempotencyKey.key).where(IdempotencyKey.player_id == ana)
        ).all()
    )
    assert keys == []
    # Once the exclusion is over, the same key deposits.
    assert _deposit(db, ana, 500, "k", hours=25).balance_cents == 500


def test_a_deposit_past_a_limit_is_refused_with_its_balance_untouched(
    engine: Engine, db: Transactions
) -> None:
    ana = _new_player(engine)
    db.write(
        limits.set_limits,
        player_id=ana,
        changes={"daily": 1_000, "weekly": 10**9, "monthly": None},  # the moderator, kept
        now=utcnow(),
    )
    _deposit(db, ana, 600, "a")
    with pytest.raises(DepositLimitReachedError) as refused:
        _deposit(db, ana, 401, "b")
    assert refused.value.detail == (
        "daily deposit limit 1000 cents: 600 deposited in the period, 401 more would pass it"
    )
    assert _balance(db, ana) == 600
    assert _deposit(db, ana, 400, "b").balance_cents == 1_000  # up to the limit exactly
