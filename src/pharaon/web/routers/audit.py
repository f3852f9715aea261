"""``GET /audit/checkpoints``: the published heads of the audit chain (public)."""

from __future__ import annotations

from fastapi import APIRouter

from pharaon.service import checkpoints
from pharaon.web.database import DatabaseDep
from pharaon.web.schemas import CheckpointOut

router = APIRouter(tags=["audit"])


@router.get("/audit/checkpoints")
async def list_checkpoints(db: DatabaseDep) -> list[CheckpointOut]:
    """Every checkpoint of the audit chain, oldest first: the head's sequence number and hash,
    when and why it was taken (block_loaded, daily). Keep a copy: ``pharaon audit
    --checkpoints FILE`` checks the chain still passes through them."""
    return [CheckpointOut.of(c) for c in await db.read(checkpoints.list_checkpoints)]
