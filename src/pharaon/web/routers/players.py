"""``POST /players``: registration."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from pharaon.service import accounts
from pharaon.service.clock import utcnow
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import hashed, seen
from pharaon.web.schemas import PlayerIn, PlayerOut

router = APIRouter(tags=["players"])


@router.post("/players", status_code=status.HTTP_201_CREATED)
async def register(body: PlayerIn, request: Request, db: DatabaseDep) -> PlayerOut:
    """Open a player's account (adults only)."""
    now = utcnow()
    email = accounts.check_sign_up(
        email=body.email, password=body.password, birth_date=body.birth_date, now=now
    )
    done = await db.write(
        accounts.register,
        email=email,
        password_hash=await hashed(body.password),
        birth_date=body.birth_date,
        now=now,
        seen=seen(request),
    )
    return PlayerOut(player_id=done.player_id, email=done.email)
