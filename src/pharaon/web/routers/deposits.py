"""``POST /deposits``: play money into the wallet (where a payment provider would plug in)."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from pharaon.service import wallet
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import IDEMPOTENCY_KEY_DOC, CurrentPlayer, IdempotencyKey, trace_refusal
from pharaon.web.schemas import DepositIn, DepositOut

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
