"""``GET /blocks``: the loaded blocks and their published commitments (public)."""

from __future__ import annotations

from fastapi import APIRouter

from pharaon.service import blocks
from pharaon.web.database import DatabaseDep
from pharaon.web.schemas import BlockOut

router = APIRouter(tags=["blocks"])


@router.get("/blocks")
async def list_blocks(db: DatabaseDep) -> list[BlockOut]:
    """Every loaded block: identity, price, state, Merkle root, units SHA-256, load time and
    the SHA-256 of the vendor's and the operator's keys (null for older blocks)."""
    return [BlockOut.of(b) for b in await db.read(blocks.published_blocks)]
