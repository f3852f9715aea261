"""The player's protection: ``POST /me/cool-off``, ``PUT /me/password``, ``POST /me/closure``."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, status
from pydantic import BaseModel, Field, StrictInt, StrictStr

from pharaon.service import protection
from pharaon.service.clock import utcnow
from pharaon.web.deps import CurrentPlayer, SessionDep
from pharaon.web.schemas import _In

router = APIRouter(tags=["protection"])


class CoolOffIn(_In):
    hours: StrictInt = Field(ge=protection.COOL_OFF_HOURS[0], le=protection.COOL_OFF_HOURS[1])


class CoolOffOut(BaseModel):
    until: datetime


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
