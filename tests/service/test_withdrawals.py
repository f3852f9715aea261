"""Withdrawals (service/withdrawals.py), on both databases: only from a verified, unsuspended
account, to the IBAN verified, from the withdrawable balance; paid at once up to the
threshold, else waiting for an admin who approves (paid) or rejects (the money back), once.
Every state is a ledger transaction through the ``withdrawals`` and ``paid_out`` accounts, so
the audit's ledger checks hold and its withdrawal checks match; a tampered withdrawal fails
them. A refusal changes nothing; a retried key withdraws once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, func, select, update

from pharaon.service import audit, standing, traces, withdrawals
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    ConflictError,
    IdempotencyConflictError,
    IdentityUnverifiedError,
    InsufficientFundsError,
    InvalidError,
    NotFoundError,
    SuspendedError,
)
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    PAID_OUT_ACCOUNT,
    WITHDRAWALS_ACCOUNT,
    Account,
    AuditRecord,
    IdempotencyKey,
    LedgerEntry,
    LedgerTransaction,
    Withdrawal,
)
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player
from tests.service.test_identity import SEEN, verify
from tests.service.test_measures import _operator, _take

THRESHOLD = 100_000
ACTOR = "operator:admin@example.org"


def _withdraw(db: Transactions, player_id: int, amount: int, key: str = "w1") -> Any:
    return db.write(
        withdrawals.request,
        player_id=player_id,
        amount_cents=amount,
        idempotency_key=key,
        approval_cents=THRESHOLD,
        now=utcnow(),
        seen=SEEN,
    )


def _decide(db: Transactions, admin: int, withdrawal_id: int, reject: str | None = None) -> Any:
    if reject is None:
        return db.write(
            withdrawals.approve,
            withdrawal_id=withdrawal_id,
            operator_id=admin,
            actor=ACTOR,
            now=utcnow(),
        )
    return db.write(
        withdrawals.reject,
        withdrawal_id=withdrawal_id,
        operator_id=admin,
        actor=ACTOR,
        reason=reject,
        now=utcnow(),
    )


def _balance(db: Transactions, player_id: int) -> int:
    return db.read(standing.look_up, player_id=player_id, now=utcnow()).balance_cents


def _accounts(db: Transactions) -> tuple[int, int]:
    held, paid = (
        db.read(
            lambda connection, a=account: connection.execute(
                select(Account.balance_cents).where(Account.id == a)
            ).scalar_one()
        )
        for account in (WITHDRAWALS_ACCOUNT, PAID_OUT_ACCOUNT)
    )
    return int(held), int(paid)


def _audit_ok(db: Transactions) -> None:
    report = db.read(audit.run_audit)
    assert report.ok, report.failures


def _verified(engine: Engine, db: Transactions, name: str, cents: int) -> tuple[int, int]:
    player = funded_player(make_sessionmaker(engine), name, cents)
    admin = _operator(db)
    verify(db, player, admin)
    return player, admin


def test_a_provisional_account_may_not_withdraw(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 5_000)
    admin = _operator(db)
    with pytest.raises(IdentityUnverifiedError):
        _withdraw(db, ana, 1_000)
    assert _balance(db, ana) == 5_000
    verify(db, ana, admin)
    done = _withdraw(db, ana, 1_000)  # the refused key was given back
    assert (done.state, done.iban) == ("paid", "FR7630006000011234567890189")


def test_up_to_the_threshold_it_is_paid_at_once(engine: Engine, db: Transactions) -> None:
    ana, _ = _verified(engine, db, "ana", 150_000)
    done = _withdraw(db, ana, THRESHOLD)
    assert (done.state, done.amount_cents, done.decided_by_operator) == ("paid", THRESHOLD, False)
    assert done.decided_at is not None
    assert _balance(db, ana) == 50_000
    assert _accounts(db) == (0, THRESHOLD)
    kinds = db.read(
        lambda connection: (
            connection.execute(select(LedgerTransaction.kind).order_by(LedgerTransaction.id))
            .scalars()
            .all()
        )
    )
    assert kinds[-2:] == ["withdrawal", "payout"]
    records = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.kind, AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.kind.like("withdrawal%"))
            .order_by(AuditRecord.seq)
        ).all()
    )
    assert [(k, a) for k, a, _ in records] == [
        ("withdrawal", f"player:{ana}"),
        ("withdrawal_paid", "server"),
    ]
    asked = json.loads(records[0].payload)
    assert (asked["session_id"], asked["address"], asked["amount_cents"]) == (
        "0123456789abcdef",
        "203.0.113.7",
        THRESHOLD,
    )
    _audit_ok(db)


def test_above_the_threshold_an_admin_approves_once(engine: Engine, db: Transactions) -> None:
    ana, admin = _verified(engine, db, "ana", 300_000)
    asked = _withdraw(db, ana, THRESHOLD + 1)
    assert (asked.state, asked.decided_at) == ("requested", None)
    assert _balance(db, ana) == 300_000 - THRESHOLD - 1  # out of the withdrawable balance
    assert _accounts(db) == (THRESHOLD + 1, 0)
    _audit_ok(db)
    [waiting] = db.read(withdrawals.listing, state="requested")
    assert (waiting.withdrawal.withdrawal_id, waiting.email) == (
        asked.withdrawal_id,
        "ana@example.org",
    )
    paid = _decide(db, admin, asked.withdrawal_id)
    assert (paid.withdrawal.state, paid.decided_by) == ("paid", "admin@example.org")
    assert _accounts(db) == (0, THRESHOLD + 1)
    with pytest.raises(ConflictError):
        _decide(db, admin, asked.withdrawal_id)
    with pytest.raises(ConflictError):
        _decide(db, admin, asked.withdrawal_id, reject="too late")
    with pytest.raises(NotFoundError):
        _decide(db, admin, 999_999)
    assert db.read(withdrawals.listing, state="requested") == []
    assert _balance(db, ana) == 300_000 - THRESHOLD - 1
    _audit_ok(db)


def test_a_rejection_gives_the_money_back(engine: Engine, db: Transactions) -> None:
    ana, admin = _verified(engine, db, "ana", 300_000)
    asked = _withdraw(db, ana, 200_000)
    with pytest.raises(InvalidError):
        _decide(db, admin, asked.withdrawal_id, reject="   ")
    rejected = _decide(db, admin, asked.withdrawal_id, reject="IBAN closed at the bank")
    assert (rejected.withdrawal.state, rejected.withdrawal.reason) == (
        "rejected",
        "IBAN closed at the bank",
    )
    assert _balance(db, ana) == 300_000
    assert _accounts(db) == (0, 0)
    [mine] = db.read(withdrawals.of_player, player_id=ana)
    assert (mine.state, mine.reason) == ("rejected", "IBAN closed at the bank")
    _audit_ok(db)


def test_only_the_withdrawable_balance(engine: Engine, db: Transactions) -> None:
    ana, _ = _verified(engine, db, "ana", 2_000)
    with pytest.raises(InsufficientFundsError):
        _withdraw(db, ana, 2_001)
    for bad in (0, -5, withdrawals.MAX_WITHDRAWAL_CENTS + 1):
        with pytest.raises(InvalidError):
            _withdraw(db, ana, bad)
    assert _balance(db, ana) == 2_000
    _withdraw(db, ana, 2_000)
    assert _balance(db, ana) == 0
    count = db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(Withdrawal)
        ).scalar_one()
    )
    assert count == 1


def _books(connection: Connection) -> dict[str, Any]:
    """What a withdrawal may change: every account's balance, and how many ledger
    transactions and entries, withdrawals, idempotency keys and audit records there are."""
    counts = {
        table.__tablename__: connection.execute(select(func.count()).select_from(table)).scalar()
        for table in (LedgerTransaction, LedgerEntry, Withdrawal, IdempotencyKey, AuditRecord)
    }
    balances = connection.execute(select(Account.id, Account.balance_cents).order_by(Account.id))
    return {**counts, "balances": balances.all()}


def test_a_withdrawal_above_the_balance_is_refused_and_changes_nothing(
    engine: Engine, db: Transactions
) -> None:
    """A cent more than the balance: refused by the withdrawal itself with the
    insufficient-funds error (the database's own check on balances is a last resort, not the
    refusal), the books as they were, the key given back; the balance exactly is paid."""
    ana, _ = _verified(engine, db, "ana", 2_000)
    before = db.read(_books)
    try:
        refused: object = _withdraw(db, ana, 2_001, key="all")
    except Exception as exc:  # whatever refused it: the assertion below says what should
        refused = exc
    assert isinstance(refused, InsufficientFundsError), refused
    assert (refused.code, refused.detail) == (
        "insufficient_funds",
        "amount_cents 2001 is more than the withdrawable balance",
    )
    assert db.read(_books) == before
    paid = _withdraw(db, ana, 2_000, key="all")  # the same key: the refusal kept nothing
    assert (paid.amount_cents, paid.state) == (2_000, withdrawals.PAID)
    assert _balance(db, ana) == 0
    _audit_ok(db)


def test_a_retried_key_withdraws_once(engine: Engine, db: Transactions) -> None:
    ana, _ = _verified(engine, db, "ana", 5_000)
    first = _withdraw(db, ana, 1_000, key="k")
    again = _withdraw(db, ana, 1_000, key="k")
    assert again == first
    assert _balance(db, ana) == 4_000
    with pytest.raises(IdempotencyConflictError):
        _withdraw(db, ana, 900, key="k")


def test_a_suspended_or_closed_account_may_not_withdraw(engine: Engine, db: Transactions) -> None:
    ana, admin = _verified(engine, db, "ana", 5_000)
    _take(db, admin, ana, "suspend", reason="checks")
    with pytest.raises(SuspendedError):
        _withdraw(db, ana, 1_000)
    _take(db, admin, ana, "lift", reason="done")
    _withdraw(db, ana, 1_000)
    assert _balance(db, ana) == 4_000


def test_the_audit_finds_a_tampered_withdrawal(engine: Engine, db: Transactions) -> None:
    ana, _ = _verified(engine, db, "ana", 300_000)
    _withdraw(db, ana, 200_000)
    _audit_ok(db)
    with engine.begin() as connection:
        connection.execute(update(Withdrawal).values(amount_cents=150_000))
    report = db.read(audit.run_audit)
    failed = {f.split(":")[0] for f in report.failures}
    assert failed == {
        "withdrawals held and paid out equal their withdrawals",
        "each withdrawal's ledger moves its amount",
    }
    with engine.begin() as connection:
        connection.execute(update(Withdrawal).values(amount_cents=200_000, state="paid"))
    failed = {f.split(":")[0] for f in db.read(audit.run_audit).failures}
    assert failed == {
        "withdrawals held and paid out equal their withdrawals",
        "each withdrawal's ledger moves its amount",
    }
    assert {"identity_unverified", "insufficient_funds", "suspended"} <= traces.REFUSALS
