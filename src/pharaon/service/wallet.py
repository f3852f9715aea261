"""The player's wallet: balances in integer cents, and deposits (play money here: a payment
provider would plug in at :func:`deposit`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import idempotency, ledger, limits, measures
from pharaon.service.errors import InvalidError
from pharaon.store.tables import CASH_ACCOUNT, Account, Deposit, Player

MAX_DEPOSIT_CENTS = 100_000_000


@dataclass(frozen=True, slots=True)
class DepositResult:
    deposit_id: int
    amount_cents: int
    balance_cents: int


def balance(*, session: Session, player_id: int) -> int:
    return int(
        session.execute(
            select(Account.balance_cents).where(Account.player_id == player_id)
        ).scalar_one()
    )


def deposit(
    *,
    session: Session,
    player_id: int,
    amount_cents: int,
    idempotency_key: str | None,
    now: datetime,
) -> DepositResult:
    """Credit ``amount_cents`` from the cash account, once per idempotency key, in the caller's
    transaction: the caller commits, or rolls back after a refusal (a limit, an exclusion)."""
    key = idempotency.check_key(idempotency_key)
    if not 1 <= amount_cents <= MAX_DEPOSIT_CENTS:
        raise InvalidError(f"amount_cents must be 1..{MAX_DEPOSIT_CENTS}, got {amount_cents}")
    claim = idempotency.claim(
        session,
        player_id=player_id,
        key=key,
        digest=idempotency.request_digest("deposit", {"amount_cents": amount_cents}),
        now=now,
    )
    if claim.replay_of is not None:
        row = session.get_one(Deposit, claim.replay_of)
        return DepositResult(row.id, row.amount_cents, row.balance_after_cents)
    excluded, pause_kind, suspended_at, suspended_until = session.execute(
        select(
            Player.self_excluded_until,
            Player.pause_kind,
            Player.suspended_at,
            Player.suspended_until,
        ).where(Player.id == player_id)
    ).one()
    suspended = measures.suspension_refusal(suspended_at, suspended_until, now)
    if suspended is not None:
        raise suspended
    limits.check_not_excluded(excluded, now, kind=pause_kind)
    # The player's row first: it serialises this player's deposits for the limit check.
    account_id, after = session.execute(
        update(Account)
        .where(Account.player_id == player_id)
        .values(balance_cents=Account.balance_cents + amount_cents)
        .returning(Account.id, Account.balance_cents)
    ).one()
    limits.check_deposit(session=session, player_id=player_id, amount_cents=amount_cents, now=now)
    transaction_id = ledger.post(
        session,
        kind="deposit",
        entries=[(CASH_ACCOUNT, -amount_cents), (account_id, amount_cents)],
        now=now,
        settled=frozenset({account_id}),
    )
    deposit_id = session.execute(
        insert(Deposit)
        .values(
            player_id=player_id,
            amount_cents=amount_cents,
            balance_after_cents=after,
            created_at=now,
            transaction_id=transaction_id,
        )
        .returning(Deposit.id)
    ).scalar_one()
    idempotency.settle_and_record(
        session,
        claim=claim,
        result_id=deposit_id,
        kind="deposit",
        player_id=player_id,
        payload={
            "deposit_id": deposit_id,
            "player_id": player_id,
            "amount_cents": amount_cents,
            "transaction_id": transaction_id,
        },
        now=now,
    )
    return DepositResult(int(deposit_id), amount_cents, int(after))
