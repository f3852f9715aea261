"""The player's protection: ``POST /me/cool-off``, ``PUT /me/reality-check``,
``GET /me/session``, ``PUT /me/password``, ``POST /me/closure``."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from pharaon.service import accounts, passwords, protection
from pharaon.service.clock import utcnow
from pharaon.service.errors import ForbiddenError
from pharaon.service.sessions import PlayerSession
from pharaon.web.database import Database, DatabaseDep
from pharaon.web.deps import CurrentPlayer, hashed, seen, verified
from pharaon.web.schemas import (
    ClosureIn,
    CoolOffIn,
    CoolOffOut,
    PasswordIn,
    RealityCheckIn,
    RealityCheckOut,
    SessionFiguresOut,
)

router = APIRouter(tags=["protection"])


@router.post("/me/cool-off")
async def cool_off(
    body: CoolOffIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> CoolOffOut:
    """Pause play and deposits for 24 hours to 7 days (never shortened)."""
    until = await db.write(
        protection.cool_off,
        player_id=current.player_id,
        hours=body.hours,
        now=utcnow(),
        seen=seen(request, current),
    )
    return CoolOffOut(until=until)


@router.put("/me/reality-check")
async def set_reality_check(
    body: RealityCheckIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> RealityCheckOut:
    """Show the reality check every ``minutes`` of a session (15, 30, 60, 120), or never."""
    minutes = await db.write(
        protection.set_reality_check,
        player_id=current.player_id,
        minutes=body.minutes,
        now=utcnow(),
        seen=seen(request, current),
    )
    return RealityCheckOut(minutes=minutes)


@router.get("/me/session")
async def session_figures(current: CurrentPlayer, db: DatabaseDep) -> SessionFiguresOut:
    """Time played since the log-in, and the session's stakes, wins and net result."""
    found = await db.read(
        protection.session_figures,
        player_id=current.player_id,
        token_sha256=current.token_sha256,
        now=utcnow(),
    )
    return SessionFiguresOut(
        started_at=found.started_at,
        elapsed_seconds=found.elapsed_seconds,
        stakes_cents=found.stakes_cents,
        wins_cents=found.wins_cents,
        net_cents=found.net_cents,
        reality_check_minutes=found.reality_check_minutes,
    )


async def _checked(db: Database, current: PlayerSession, password: str, wrong: str) -> str:
    """The player's password hash, once ``password`` is found to match it; else 403."""
    stored = await db.read(accounts.password_hash, player_id=current.player_id)
    if not await verified(stored, password):
        raise ForbiddenError(wrong)
    return stored


@router.put("/me/password", status_code=status.HTTP_204_NO_CONTENT)
async def change_password(
    body: PasswordIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> None:
    """Change the password (the current one is asked); the player's other sessions end."""
    passwords.check_length(body.new_password)
    checked = await _checked(db, current, body.current_password, "the current password is wrong")
    await db.write(
        protection.change_password,
        player_id=current.player_id,
        checked_hash=checked,
        new_hash=await hashed(body.new_password),
        keep_session_sha256=current.token_sha256,
        now=utcnow(),
        seen=seen(request, current),
    )


@router.post("/me/closure", status_code=status.HTTP_204_NO_CONTENT)
async def close_account(
    body: ClosureIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> None:
    """Close the account (the password is asked); the balance stays on the ledger."""
    checked = await _checked(db, current, body.password, "the password is wrong")
    await db.write(
        protection.close_account,
        player_id=current.player_id,
        checked_hash=checked,
        now=utcnow(),
        seen=seen(request, current),
    )
