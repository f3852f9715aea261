"""``/me``: the player's balance, limits and self-exclusion, and the operator's measures."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from fastapi import APIRouter, Request

from pharaon.service import limits, measures, standing
from pharaon.service.clock import utcnow
from pharaon.service.sessions import PlayerSession
from pharaon.web.database import Database, DatabaseDep
from pharaon.web.deps import CurrentPlayer, seen
from pharaon.web.schemas import LimitsIn, LimitsOut, MeOut, NoteOut, SelfExclusionIn

router = APIRouter(tags=["me"])


async def _me(db: Database, current: PlayerSession) -> MeOut:
    found = await db.read(standing.look_up, player_id=current.player_id, now=utcnow())
    return MeOut(
        email=current.email,
        balance_cents=found.balance_cents,
        limits=LimitsOut.of(found.limits),
        self_excluded_until=found.self_excluded_until,
        reality_check_minutes=found.reality_check_minutes,
        suspended=found.suspended,
        suspended_until=found.suspended_until,
    )


@router.get("/me")
async def me(current: CurrentPlayer, db: DatabaseDep) -> MeOut:
    """The player's balance, limits and self-exclusion."""
    return await _me(db, current)


@router.get("/me/notes")
async def notes(current: CurrentPlayer, db: DatabaseDep) -> list[NoteOut]:
    """What the operator did on the account (a suspension, an exclusion, its lifting) or said
    to the player, with the reasons given, newest first."""
    found = await db.read(measures.notes, player_id=current.player_id)
    return [NoteOut(**asdict(n)) for n in found]


@router.put("/me/limits")
async def set_limits(
    body: LimitsIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> LimitsOut:
    """Set the deposit limits and the weekly loss limit (left out: unchanged): lowering
    applies at once, raising after 24 hours."""
    loss: int | Literal["keep"] | None = "keep"
    if "loss_weekly_cents" in body.model_fields_set:
        loss = body.loss_weekly_cents
    found = await db.write(
        limits.set_limits,
        player_id=current.player_id,
        daily_cents=body.daily_cents,
        weekly_cents=body.weekly_cents,
        monthly_cents=body.monthly_cents,
        now=utcnow(),
        loss_weekly_cents=loss,
        seen=seen(request, current),
    )
    return LimitsOut.of(found)


@router.post("/me/self-exclusion")
async def self_exclude(
    body: SelfExclusionIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> MeOut:
    """Exclude oneself from deposits and plays for ``days`` days."""
    await db.write(
        limits.self_exclude,
        player_id=current.player_id,
        days=body.days,
        now=utcnow(),
        seen=seen(request, current),
    )
    return await _me(db, current)
