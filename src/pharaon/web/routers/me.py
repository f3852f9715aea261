"""``/me``: the player's balance, limits and self-exclusion."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from pharaon.service import limits, standing
from pharaon.service.clock import utcnow
from pharaon.service.sessions import Current
from pharaon.web.deps import CurrentPlayer, ReadsDep, SessionDep
from pharaon.web.schemas import LimitsIn, LimitsOut, MeOut, SelfExclusionIn

router = APIRouter(tags=["me"])


def _me(current: Current, found: standing.Standing) -> MeOut:
    return MeOut(
        email=current.email,
        balance_cents=found.balance_cents,
        limits=LimitsOut.of(found.limits),
        self_excluded_until=found.self_excluded_until,
        reality_check_minutes=found.reality_check_minutes,
    )


@router.get("/me")
async def me(current: CurrentPlayer, reads: ReadsDep) -> MeOut:
    """The player's balance, limits and self-exclusion."""
    player_id, now = current.player_id, utcnow()
    found = await reads.read(
        lambda connection: standing.look_up(connection=connection, player_id=player_id, now=now)
    )
    return _me(current, found)


@router.put("/me/limits")
def set_limits(body: LimitsIn, current: CurrentPlayer, session: SessionDep) -> LimitsOut:
    """Set the deposit limits and the weekly loss limit (left out: unchanged): lowering
    applies at once, raising after 24 hours."""
    loss: int | Literal["keep"] | None = "keep"
    if "loss_weekly_cents" in body.model_fields_set:
        loss = body.loss_weekly_cents
    found = limits.set_limits(
        session=session,
        player_id=current.player_id,
        daily_cents=body.daily_cents,
        weekly_cents=body.weekly_cents,
        monthly_cents=body.monthly_cents,
        now=utcnow(),
        loss_weekly_cents=loss,
    )
    session.commit()
    return LimitsOut.of(found)


@router.post("/me/self-exclusion")
def self_exclude(body: SelfExclusionIn, current: CurrentPlayer, session: SessionDep) -> MeOut:
    """Exclude oneself from deposits and plays for ``days`` days."""
    now = utcnow()
    limits.self_exclude(session=session, player_id=current.player_id, days=body.days, now=now)
    # Read in the same transaction: it shows the exclusion before the commit.
    found = standing.look_up(connection=session.connection(), player_id=current.player_id, now=now)
    session.commit()
    return _me(current, found)
