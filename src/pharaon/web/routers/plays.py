"""``/plays``: buy a unit, uncover it, and the history."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from pharaon.service import blocks, plays, proofs, receipts, sales
from pharaon.service.errors import NotFoundError, ServiceError
from pharaon.service.orders import Order, SoldPlay
from pharaon.service.plays import PlayView
from pharaon.web.database import Database, DatabaseDep
from pharaon.web.deps import (
    IDEMPOTENCY_HEADER,
    IDEMPOTENCY_KEY_DOC,
    CurrentPlayer,
    RowId,
    trace_refusal,
)
from pharaon.web.observe import Metrics
from pharaon.web.schemas import (
    GridOut,
    PlayIn,
    PlayOut,
    PlayPage,
    ProofOut,
    PurchaseOut,
    ReceiptKeyOut,
    RevealIn,
)

router = APIRouter(tags=["plays"])


@router.post("/plays", status_code=status.HTTP_201_CREATED, openapi_extra=IDEMPOTENCY_KEY_DOC)
async def buy(
    body: PlayIn, current: CurrentPlayer, request: Request, db: DatabaseDep
) -> PurchaseOut:
    """Buy the next unit at ``stake_cents``; a retry with the same Idempotency-Key charges
    once and returns the same play. The answer carries the sale's signed receipt."""
    # The busiest route reads its header itself: FastAPI solves a route's header parameters
    # anew on each request, slowly.
    key = request.headers.get(IDEMPOTENCY_HEADER)
    order = Order(current.player_id, body.stake_cents, body.mode, key)
    try:
        sold: SoldPlay | PlayView = await db.write_together(sales.sell, order)
    except ServiceError as exc:
        await trace_refusal(
            request, db, current, exc, "purchase_refused", stake_cents=body.stake_cents,
            mode=str(body.mode),
        )  # fmt: skip
        raise
    if isinstance(sold, SoldPlay):  # not a retry's earlier play
        metrics: Metrics = request.app.state.metrics
        metrics.sold(order.stake_cents, order.mode)
        sold = sold.view()
    return PurchaseOut.of(sold, receipt=await _receipt(request, db, sold))


async def _receipt(request: Request, db: Database, play: PlayView) -> dict[str, str] | None:
    """The signed receipt of ``play``'s sale (the same for a retry's answer); None without the
    receipts' key."""
    signer: receipts.Signer | None = request.app.state.receipts
    if signer is None:
        return None
    known: dict[int, blocks.BlockIdentity] = request.app.state.block_identities
    block = known.get(play.block_id)  # a block's identity never changes
    if block is None:
        block = known[play.block_id] = await db.read(blocks.identity, block_id=play.block_id)
    sold = receipts.Sold(
        play_id=play.play_id,
        block_id=play.block_id,
        emission=block.emission,
        block_number=block.block_number,
        price_cents=block.price_cents,
        serial=play.serial,
        time=play.created_at,
        merkle_root=block.merkle_root,
    )
    return asdict(signer.receipt(sold))


@router.get("/receipts/key")
async def receipt_key(request: Request) -> ReceiptKeyOut:
    """The public key that signs the sales' receipts (no session needed); 404 from a server
    without it."""
    signer: receipts.Signer | None = request.app.state.receipts
    if signer is None:
        raise NotFoundError("this server has no receipts' key")
    return ReceiptKeyOut(algorithm="Ed25519", public_key=signer.public_key, format=receipts.FORMAT)


@router.post("/plays/{play_id}/reveal")
async def reveal(
    play_id: RowId, body: RevealIn, current: CurrentPlayer, db: DatabaseDep
) -> PlayOut:
    """Uncover grid ``grid`` (1..4), or the grids ``grids``; the last grid shows the bonus
    grid and the lot, which moves then."""
    first, *also = body.uncovered()
    uncovered = await db.write_together(
        plays.reveal, plays.Reveal(current.player_id, play_id, first, tuple(also))
    )
    return PlayOut.of(uncovered)


@router.get("/plays/{play_id}/grids/{grid}")
async def get_grid(
    play_id: RowId,
    grid: Annotated[int, Path(ge=1, le=4)],
    current: CurrentPlayer,
    db: DatabaseDep,
) -> GridOut:
    """Grid ``grid`` (1..4) of one of the player's plays, without uncovering it: a read that
    writes nothing, in one statement with the other grid reads of the moment. The page shows
    grids 1 to 3 of a « Jouer » play so and ends the play with one ``reveal`` of every grid
    (the lot moves then)."""
    codes = await db.read_together(
        plays.grid_codes, plays.GridAsked(current.player_id, play_id, grid)
    )
    return GridOut(play_id=play_id, grid=grid, codes=codes)


@router.get("/plays/{play_id}")
async def get_play(play_id: RowId, current: CurrentPlayer, db: DatabaseDep) -> PlayOut:
    """One of the player's plays, as far as it is uncovered."""
    found = await db.read(plays.view_play, player_id=current.player_id, play_id=play_id)
    return PlayOut.of(found)


@router.get("/plays/{play_id}/proof")
async def get_proof(play_id: RowId, current: CurrentPlayer, db: DatabaseDep) -> ProofOut:
    """The proof that a finished play's unit belongs to its block (docs/proofs.md): 404 for
    another's play, 409 for one not yet fully uncovered."""
    found = await db.read(proofs.play_proof, player_id=current.player_id, play_id=play_id)
    return ProofOut.of(found)


@router.get("/plays")
async def history(
    current: CurrentPlayer,
    db: DatabaseDep,
    limit: Annotated[int, Query(ge=1, le=plays.MAX_PAGE)] = 20,
    before: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> PlayPage:
    """The player's plays, newest first, ``limit`` per page."""
    found, next_before = await db.read(
        plays.history, player_id=current.player_id, limit=limit, before=before
    )
    return PlayPage(plays=[PlayOut.of(p) for p in found], next_before=next_before)
