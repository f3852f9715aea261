"""``GET /prizes/remaining``: the lots still to be won in the block on sale."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from pharaon.service import blocks
from pharaon.web.deps import ReaderDep
from pharaon.web.schemas import RemainingOut

router = APIRouter(tags=["prizes"])


@router.get("/prizes/remaining")
def remaining(reader: ReaderDep, stake_cents: Annotated[int, Query()] = 100) -> list[RemainingOut]:
    """Per lot, how many units still hold it in the block on sale at ``stake_cents``."""
    # In a thread, not at the read desk: counting a block's sold lots takes longer as it sells,
    # and would hold up the reads queued behind it.
    with reader.connect() as connection:
        found = blocks.remaining_prizes(connection=connection, stake_cents=stake_cents)
    return [RemainingOut(prize_cents=lot, remaining=n) for lot, n in found]
