"""The wallet: ``POST /deposits`` (play money into it, where a payment provider would plug in)
and ``/withdrawals`` (money out of it, to the IBAN checked with the player's identity)."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from pharaon.service import identity, wallet, withdrawals
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import (
    IDEMPOTENCY_KEY_DOC,
    CurrentPlayer,
    IdempotencyKey,
    SettingsDep,
    seen,
    trace_refusal,
)
from pharaon.web.schemas import DepositIn, DepositOut, WithdrawalIn, WithdrawalOut

router = APIRouter(tags=["wallet"])


@router.post("/deposits", status_code=status.HTTP_201_CREATED, openapi_extra=IDEMPOTENCY_KEY_DOC)
async def deposit(
    body: DepositIn,
    current: CurrentPlayer,
    request: Request,
    db: DatabaseDep,
    key: IdempotencyKey = None,
) -> DepositOut:
    """Deposit ``amount_cents``; a retry with the same Idempotency-Key credits once. A deposit
    refused (a limit, an exclusion) is traced."""
    try:
        done = await db.write(
            wallet.deposit,
            player_id=current.player_id,
            amount_cents=body.amount_cents,
            idempotency_key=key,
            now=utcnow(),
        )
    except ServiceError as exc:
        await trace_refusal(
            request, db, current, exc, "deposit_refused", amount_cents=body.amount_cents
        )
        raise
    return DepositOut(
        deposit_id=done.deposit_id, amount_cents=done.amount_cents, balance_cents=done.balance_cents
    )


def _shown(found: withdrawals.WithdrawalView) -> WithdrawalOut:
    return WithdrawalOut.of(found, identity.masked_iban(found.iban))


@router.post("/withdrawals", status_code=status.HTTP_201_CREATED, openapi_extra=IDEMPOTENCY_KEY_DOC)
async def withdraw(
    *,
    body: WithdrawalIn,
    current: CurrentPlayer,
    request: Request,
    db: DatabaseDep,
    settings: SettingsDep,
    key: IdempotencyKey = None,
) -> WithdrawalOut:
    """Withdraw ``amount_cents`` from the balance to the IBAN verified with the identity: paid
    at once up to the approval threshold, else waiting for an admin. A retry with the same
    Idempotency-Key withdraws once; a refusal (provisional account, suspension, funds) is
    traced."""
    try:
        done = await db.write(
            withdrawals.request,
            player_id=current.player_id,
            amount_cents=body.amount_cents,
            idempotency_key=key,
            approval_cents=settings.withdrawal_approval_cents,
            now=utcnow(),
            seen=seen(request, current),
        )
    except ServiceError as exc:
        await trace_refusal(
            request, db, current, exc, "withdrawal_refused", amount_cents=body.amount_cents
        )
        raise
    return _shown(done)


@router.get("/withdrawals")
async def my_withdrawals(current: CurrentPlayer, db: DatabaseDep) -> list[WithdrawalOut]:
    """The player's last withdrawals (at most 50), newest first, with their state."""
    found = await db.read(withdrawals.of_player, player_id=current.player_id)
    return [_shown(w) for w in found]
