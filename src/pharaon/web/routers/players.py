"""``POST /players``: registration."""

from __future__ import annotations

from fastapi import APIRouter, status

from pharaon.service import accounts
from pharaon.service.clock import utcnow
from pharaon.web.deps import SessionDep
from pharaon.web.schemas import PlayerIn, PlayerOut

router = APIRouter(tags=["players"])


@router.post("/players", status_code=status.HTTP_201_CREATED)
def register(body: PlayerIn, session: SessionDep) -> PlayerOut:
    """Open a player's account (adults only)."""
    done = accounts.register(
        session=session,
        email=body.email,
        password=body.password,
        birth_date=body.birth_date,
        now=utcnow(),
    )
    session.commit()
    return PlayerOut(player_id=done.player_id, email=done.email)
