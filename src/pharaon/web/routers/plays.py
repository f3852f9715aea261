"""``/plays``: buy a unit, uncover it, and the history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status

from pharaon.service import plays, proofs, sales, traces
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError
from pharaon.service.orders import Order, SoldPlay
from pharaon.service.plays import PlayView
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_DOC, CurrentPlayer, RowId, seen
from pharaon.web.observe import Metrics
from pharaon.web.schemas import PlayIn, PlayOut, PlayPage, ProofOut, RevealIn

router = APIRouter(tags=["plays"])


@router.post("/plays", status_code=status.HTTP_201_CREATED, openapi_extra=IDEMPOTENCY_KEY_DOC)
async def buy(body: PlayIn, current: CurrentPlayer, request: Request, db: DatabaseDep) -> PlayOut:
    """Buy the next unit at ``stake_cents``; a retry with the same Idempotency-Key charges
    once and returns the same play."""
    # The busiest route reads its header itself: FastAPI solves a route's header parameters
    # anew on each request, slowly.
    key = request.headers.get(IDEMPOTENCY_HEADER)
    order = Order(current.player_id, body.stake_cents, body.mode, key)
    try:
        sold: SoldPlay | PlayView = await db.write_together(sales.sell, order)
    except ServiceError as exc:
        if exc.code in traces.REFUSALS:
            await db.write(
                traces.record,
                kind="purchase_refused",
                player_id=current.player_id,
                seen=seen(request, current),
                now=utcnow(),
                refusal=exc.code,
                stake_cents=body.stake_cents,
                mode=str(body.mode),
            )
        raise
    if isinstance(sold, SoldPlay):  # not a retry's earlier play
        metrics: Metrics = request.app.state.metrics
        metrics.sold(order.stake_cents, order.mode)
        return PlayOut.of(sold.view())
    return PlayOut.of(sold)


@router.post("/plays/{play_id}/reveal")
async def reveal(
    play_id: RowId, body: RevealIn, current: CurrentPlayer, db: DatabaseDep
) -> PlayOut:
    """Uncover grid ``grid`` (1..4); the fourth shows the bonus grid and the lot."""
    uncovered = await db.write_together(
        plays.reveal, plays.Reveal(current.player_id, play_id, body.grid)
    )
    return PlayOut.of(uncovered)


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
