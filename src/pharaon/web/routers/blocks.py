"""``GET /blocks``: the loaded blocks and their published commitments (public)."""

from __future__ import annotations

from fastapi import APIRouter

from pharaon.service import blocks
from pharaon.web.deps import ReaderDep
from pharaon.web.schemas import BlockOut

router = APIRouter(tags=["blocks"])


@router.get("/blocks")
def list_blocks(reader: ReaderDep) -> list[BlockOut]:
    """Every loaded block: identity, price, state, Merkle root, units SHA-256, load time and
    the SHA-256 of the vendor's and the operator's keys (null for older blocks)."""
    with reader.connect() as connection:
        found = blocks.published_blocks(connection=connection)
    return [BlockOut.of(b) for b in found]
