"""``GET /prizes/remaining``: the lots still to be won in the block on sale."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from pharaon.game.rules import rules
from pharaon.service import blocks
from pharaon.web.database import DatabaseDep
from pharaon.web.schemas import RemainingOut

router = APIRouter(tags=["prizes"])


def _a_price(stake_cents: int) -> int:
    rules().multiplier(stake_cents)  # ValueError (answered 422) for a stake not on sale
    return stake_cents


# Refused before a connection is taken; the enum shows the prices on the API page.
Stake = Annotated[
    int,
    Query(json_schema_extra={"enum": list(rules().prices_cents)}),
    AfterValidator(_a_price),
]
FIRST_PRICE = rules().prices_cents[0]


@router.get("/prizes/remaining")
async def remaining(db: DatabaseDep, stake_cents: Stake = FIRST_PRICE) -> list[RemainingOut]:
    """Per lot, how many units still hold it in the block on sale at ``stake_cents`` (by
    default the rules' first price)."""
    found = await db.read(blocks.remaining_prizes, stake_cents=stake_cents)
    return [RemainingOut(prize_cents=lot, remaining=n) for lot, n in found]
