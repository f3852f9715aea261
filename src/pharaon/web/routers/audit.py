"""``GET /audit/checkpoints``: the published heads of the audit chain (public)."""

from __future__ import annotations

from fastapi import APIRouter

from pharaon.service import checkpoints
from pharaon.web.deps import ReaderDep
from pharaon.web.schemas import CheckpointOut

router = APIRouter(tags=["audit"])


@router.get("/audit/checkpoints")
def list_checkpoints(reader: ReaderDep) -> list[CheckpointOut]:
    """Every checkpoint of the audit chain, oldest first: the head's sequence number and hash,
    when and why it was taken (block_loaded, daily). Keep a copy: ``pharaon audit
    --checkpoints FILE`` checks the chain still passes through them."""
    with reader.connect() as connection:
        found = checkpoints.list_checkpoints(connection=connection)
    return [CheckpointOut.of(c) for c in found]
