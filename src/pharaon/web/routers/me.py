"""``/me``: the player's balance, limits and self-exclusion, the operator's measures and the
identity's state."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

from fastapi import APIRouter, Request

from pharaon.service import identity, limits, measures, standing
from pharaon.service.clock import utcnow
from pharaon.service.sessions import PlayerSession
from pharaon.web.database import Database, DatabaseDep
from pharaon.web.deps import CurrentPlayer, SettingsDep, seen
from pharaon.web.schemas import (
    IdentityOut,
    LimitsIn,
    LimitsOut,
    MeOut,
    NoteOut,
    SelfExclusionIn,
)

router = APIRouter(tags=["me"])


async def _me(db: Database, current: PlayerSession, identity_days: float) -> MeOut:
    now = utcnow()
    found = await db.read(standing.look_up, player_id=current.player_id, now=now)
    return MeOut(
        email=current.email,
        balance_cents=found.balance_cents,
        limits=LimitsOut.of(found.limits),
        self_excluded_until=found.self_excluded_until,
        pause_kind=found.pause_kind,  # type: ignore[arg-type]  # one of PAUSE_KINDS
        reality_check_minutes=found.reality_check_minutes,
        suspended=found.suspended,
        suspended_until=found.suspended_until,
        identity=IdentityOut.of(
            identity.identity_of(
                created_at=found.created_at,
                verified_at=found.verified_at,
                now=now,
                days=identity_days,
            )
        ),
    )


@router.get("/me")
async def me(current: CurrentPlayer, db: DatabaseDep, settings: SettingsDep) -> MeOut:
    """The player's balance, limits, self-exclusion, suspension and identity's state."""
    return await _me(db, current, settings.identity_days)


@router.get("/me/notes")
async def notes(current: CurrentPlayer, db: DatabaseDep) -> list[NoteOut]:
    """What the operator did on the account (a suspension, an exclusion, its lifting) or said
    to the player, with the reasons given, newest first."""
    found = await db.read(measures.notes, player_id=current.player_id)
    return [NoteOut(**asdict(n)) for n in found]


@router.put("/me/limits")
async def set_limits(
    body: LimitsIn,
    current: CurrentPlayer,
    request: Request,
    db: DatabaseDep,
    settings: SettingsDep,
) -> LimitsOut:
    """Set the limits the body gives (deposits per 24 hours, 7 and 30 days, the weekly loss
    limit, stakes per 24 hours, 7 and 30 days), each left out unchanged with any raise it
    waits for: lowering applies at once, raising after ``PHARAON_LIMIT_RAISE_HOURS`` (48). The
    weekly deposit ceiling and the weekly stake ceiling are the moderators: deposits and
    purchases wait for both, and once set they may be changed, not removed (422)."""
    found = await db.write(
        limits.set_limits,
        player_id=current.player_id,
        changes={
            kind: getattr(body, field)
            for kind, field in limits.FIELDS.items()
            if field in body.model_fields_set
        },
        now=utcnow(),
        raise_delay=timedelta(hours=settings.limit_raise_hours),
        seen=seen(request, current),
    )
    return LimitsOut.of(found)


@router.post("/me/self-exclusion")
async def self_exclude(
    body: SelfExclusionIn,
    current: CurrentPlayer,
    request: Request,
    db: DatabaseDep,
    settings: SettingsDep,
) -> MeOut:
    """Exclude oneself from deposits and plays for ``days`` days."""
    await db.write(
        limits.self_exclude,
        player_id=current.player_id,
        days=body.days,
        now=utcnow(),
        seen=seen(request, current),
    )
    return await _me(db, current, settings.identity_days)
