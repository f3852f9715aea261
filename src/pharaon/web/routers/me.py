"""``/me``: the player's balance, limits and self-exclusion."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy.orm import Session

from pharaon.service import limits, wallet
from pharaon.service.clock import utcnow
from pharaon.web.deps import CurrentPlayer, SessionDep
from pharaon.web.schemas import LimitsIn, LimitsOut, MeOut, SelfExclusionIn

router = APIRouter(tags=["me"])


def _me(session: Session, player_id: int, email: str) -> MeOut:
    now = utcnow()
    balance = wallet.balance(session=session, player_id=player_id)
    found = limits.get_limits(session=session, player_id=player_id, now=now)
    until = limits.excluded_until(session=session, player_id=player_id, now=now)
    session.rollback()
    return MeOut(
        email=email, balance_cents=balance, limits=LimitsOut.of(found), self_excluded_until=until
    )


@router.get("/me")
def me(current: CurrentPlayer, session: SessionDep) -> MeOut:
    """The player's balance, limits and self-exclusion."""
    return _me(session, current.player_id, current.email)


@router.put("/me/limits")
def set_limits(body: LimitsIn, current: CurrentPlayer, session: SessionDep) -> LimitsOut:
    """Set the deposit limits: lowering applies at once, raising after 24 hours."""
    found = limits.set_limits(
        session=session,
        player_id=current.player_id,
        daily_cents=body.daily_cents,
        weekly_cents=body.weekly_cents,
        monthly_cents=body.monthly_cents,
        now=utcnow(),
    )
    return LimitsOut.of(found)


@router.post("/me/self-exclusion")
def self_exclude(body: SelfExclusionIn, current: CurrentPlayer, session: SessionDep) -> MeOut:
    """Exclude oneself from deposits and plays for ``days`` days."""
    limits.self_exclude(session=session, player_id=current.player_id, days=body.days, now=utcnow())
    return _me(session, current.player_id, current.email)
