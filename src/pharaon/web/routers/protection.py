"""The player's protection: ``POST /me/cool-off``, ``PUT /me/reality-check``,
``GET /me/session``, ``PUT /me/password``, ``POST /me/closure``."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, status
from pydantic import BaseModel, Field, StrictInt, StrictStr

from pharaon.service import protection
from pharaon.service.clock import utcnow
from pharaon.web.deps import CurrentPlayer, ReaderDep, SessionDep
from pharaon.web.schemas import _In

router = APIRouter(tags=["protection"])


class CoolOffIn(_In):
    hours: StrictInt = Field(ge=protection.COOL_OFF_HOURS[0], le=protection.COOL_OFF_HOURS[1])


class CoolOffOut(BaseModel):
    until: datetime


class RealityCheckIn(_In):
    minutes: StrictInt | None = Field(
        json_schema_extra={"enum": [*protection.REALITY_CHECK_MINUTES, None]}
    )


class RealityCheckOut(BaseModel):
    minutes: int | None


class SessionFiguresOut(BaseModel):
    """The figures of the reality check, since the log-in."""

    started_at: datetime
    elapsed_seconds: int
    stakes_cents: int
    wins_cents: int
    net_cents: int
    reality_check_minutes: int | None


class PasswordIn(_In):
    current_password: StrictStr = Field(max_length=256)
    new_password: StrictStr = Field(max_length=256)


@router.post("/me/cool-off")
def cool_off(body: CoolOffIn, current: CurrentPlayer, session: SessionDep) -> CoolOffOut:
    """Pause play and deposits for 24 hours to 7 days (never shortened)."""
    until = protection.cool_off(
        session=session, player_id=current.player_id, hours=body.hours, now=utcnow()
    )
    session.commit()
    return CoolOffOut(until=until)


@router.put("/me/reality-check")
def set_reality_check(
    body: RealityCheckIn, current: CurrentPlayer, session: SessionDep
) -> RealityCheckOut:
    """Show the reality check every ``minutes`` of a session (15, 30, 60, 120), or never."""
    minutes = protection.set_reality_check(
        session=session, player_id=current.player_id, minutes=body.minutes, now=utcnow()
    )
    session.commit()
    return RealityCheckOut(minutes=minutes)


@router.get("/me/session")
def session_figures(current: CurrentPlayer, reader: ReaderDep) -> SessionFiguresOut:
    """Time played since the log-in, and the session's stakes, wins and net result."""
    with reader.connect() as connection:
        found = protection.session_figures(
            connection=connection,
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


@router.put("/me/password", status_code=status.HTTP_204_NO_CONTENT)
def change_password(body: PasswordIn, current: CurrentPlayer, session: SessionDep) -> None:
    """Change the password (the current one is asked); the player's other sessions end."""
    protection.change_password(
        session=session,
        player_id=current.player_id,
        current_password=body.current_password,
        new_password=body.new_password,
        keep_session_sha256=current.token_sha256,
        now=utcnow(),
    )
    session.commit()


class ClosureIn(_In):
    password: StrictStr = Field(max_length=256)


@router.post("/me/closure", status_code=status.HTTP_204_NO_CONTENT)
def close_account(body: ClosureIn, current: CurrentPlayer, session: SessionDep) -> None:
    """Close the account (the password is asked); the balance stays on the ledger."""
    protection.close_account(
        session=session, player_id=current.player_id, password=body.password, now=utcnow()
    )
    session.commit()
