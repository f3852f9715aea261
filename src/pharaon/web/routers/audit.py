"""The audit chain's published heads, and the audit log as a transparency log (public): the
signed checkpoint, its key, inclusion and consistency proofs, and the witnesses'
cosignatures (docs/proofs.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import PlainTextResponse

from pharaon.pool import notes, tlog
from pharaon.service import checkpoints, logtree, revealed_keys, transparency
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.settings import Settings
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import RowId
from pharaon.web.schemas import (
    CheckpointOut,
    ConsistencyOut,
    CosignatureIn,
    CosignedOut,
    InclusionOut,
    LogKeyOut,
    RevealedKeysOut,
)

router = APIRouter(tags=["audit"])

Size = Annotated[int, Query(ge=0, le=2**31 - 1)]
_NOT_READ = object()


def _signer(request: Request) -> notes.Signer:
    """The checkpoint key of the server's key folder, read once (404 without it)."""
    state = request.app.state
    signer = getattr(state, "checkpoint_signer", _NOT_READ)
    if signer is _NOT_READ:
        settings: Settings = state.settings
        signer = state.checkpoint_signer = transparency.load(settings.keys_dir, settings.log_origin)
    if not isinstance(signer, notes.Signer):
        raise NotFoundError("this server has no checkpoint key")
    return signer


def _witnesses(request: Request) -> tuple[notes.Verifier, ...]:
    state = request.app.state
    found = getattr(state, "witnesses", None)
    if found is None:
        settings: Settings = state.settings
        found = state.witnesses = transparency.witness_keys(settings.witness_keys)
    return tuple(found)


@router.get("/audit/checkpoints")
async def list_checkpoints(db: DatabaseDep) -> list[CheckpointOut]:
    """Every checkpoint of the audit chain, oldest first: the head's sequence number and hash,
    when and why it was taken (block_loaded, daily), and the root of the log's Merkle tree at
    it (null until the tree reached it). Keep a copy: ``pharaon audit --checkpoints FILE``
    checks the chain still passes through them."""
    return [CheckpointOut.of(c) for c in await db.read(checkpoints.list_checkpoints)]


@router.get("/audit/blocks/{block_id}/keys")
async def block_keys(block_id: RowId, db: DatabaseDep) -> RevealedKeysOut:
    """A closed block's vendor and operator keys (hex), published by the operator once every
    block they made is sold out or deactivated, with their SHA-256 commitments (those of
    ``GET /blocks``), the design the manifest names and the blocks the pair made. With them
    ``pharaon reproduce`` regenerates the block and compares its units and Merkle root with
    the published ones. 404 ``not_revealed`` before."""
    return RevealedKeysOut.of(await db.read(revealed_keys.revealed, block_id=block_id))


@router.get(
    "/audit/checkpoint",
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "A note"}
    },
)
async def signed_checkpoint(
    request: Request, db: DatabaseDep, size: Size | None = None
) -> PlainTextResponse:
    """The last checkpoint (or the one of ``size`` records) as a C2SP signed note: origin,
    tree size and base64 root, a blank line, the operator's signature line and the
    witnesses' cosignature lines received for it. 404 before the first one, or without the
    key."""
    note = await db.read(transparency.checkpoint_note, signer=_signer(request), size=size)
    return PlainTextResponse(note, headers={"Cache-Control": "no-cache"})


@router.get("/audit/key")
async def log_key(request: Request) -> LogKeyOut:
    """The public key that signs the checkpoints, raw and as a signed-note verifier key."""
    signer = _signer(request)
    return LogKeyOut(
        algorithm="Ed25519",
        public_key=transparency.public_key(signer),
        verifier_key=signer.verifier.vkey,
        origin=signer.verifier.name,
    )


@router.get("/audit/proofs/inclusion")
async def inclusion_proof(
    db: DatabaseDep,
    seq: Annotated[int, Query(ge=1, le=2**31 - 1)],
    tree_size: Size,
) -> InclusionOut:
    """That audit record ``seq`` is leaf ``seq - 1`` of the log's tree of ``tree_size``
    records (RFC 9162 §2.1.3): the record's chain hash, its leaf hash and the path, bottom
    up. 404 for a size beyond the stored tree or a record beyond the size."""
    digest, proof = await db.read(logtree.inclusion, seq=seq, tree_size=tree_size)
    root = await db.read(logtree.root, tree_size=tree_size)
    return InclusionOut(
        seq=seq,
        tree_size=tree_size,
        leaf_index=seq - 1,
        record_sha256=digest,
        leaf_hash=tlog.leaf_hash(bytes.fromhex(digest)).hex(),
        proof=[h.hex() for h in proof],
        root=root.hex(),
    )


@router.get("/audit/proofs/consistency")
async def consistency_proof(db: DatabaseDep, first: Size, second: Size) -> ConsistencyOut:
    """That the log's tree of ``first`` records is a prefix of its tree of ``second``
    (RFC 9162 §2.1.4). 404 for a size beyond the stored tree or ``first`` above ``second``."""
    proof = await db.read(logtree.consistency, first=first, second=second)
    return ConsistencyOut(first=first, second=second, proof=[h.hex() for h in proof])


@router.post("/audit/cosignatures", status_code=status.HTTP_201_CREATED)
async def cosign(request: Request, body: CosignatureIn, db: DatabaseDep) -> CosignedOut:
    """A witness's cosigned checkpoint: the note this server signed with the witness's
    cosignature line added; kept when its key is one of ``PHARAON_WITNESS_KEYS`` and the
    cosignature holds (422 otherwise; 403 with no witness configured; 404 for a checkpoint
    this server never took). Published since with the checkpoint."""
    done = await db.write(
        transparency.receive_cosignatures,
        note=body.note,
        log_key=_signer(request).verifier,  # the private key stays in this process
        witnesses=_witnesses(request),
        now=utcnow(),
    )
    return CosignedOut(tree_size=done.tree_size, witnesses=list(done.witnesses))
