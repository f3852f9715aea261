"""``/plays``: buy a unit, uncover it, and the history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from pharaon.service import plays, proofs
from pharaon.web.deps import (
    IDEMPOTENCY_HEADER,
    IDEMPOTENCY_KEY_DOC,
    CredentialsDep,
    CurrentPlayer,
    ReaderDep,
    ReadsDep,
)
from pharaon.web.desk import Purchase, RevealDesk, SalesDesk
from pharaon.web.schemas import PlayIn, PlayOut, PlayPage, ProofOut, RevealIn

router = APIRouter(tags=["plays"])

PlayId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/plays", status_code=status.HTTP_201_CREATED, openapi_extra=IDEMPOTENCY_KEY_DOC)
async def buy(body: PlayIn, shown: CredentialsDep, request: Request) -> PlayOut:
    """Buy the next unit at ``stake_cents``; a retry with the same Idempotency-Key charges
    once and returns the same play."""
    # The busiest route reads its header and desk itself: FastAPI solves a route's header
    # parameters anew on each request, slowly. Its session is looked up by the sales desk,
    # with those of the other purchases of its batch (one read for them all); the credentials
    # stay a dependency, so that a request without any gets 401 before its body is judged, as
    # on every route.
    key = request.headers.get(IDEMPOTENCY_HEADER)
    desk: SalesDesk = request.app.state.desk
    play = await desk.buy(Purchase(shown, body.stake_cents, body.mode, key, request.state))
    return PlayOut.of(play)


@router.post("/plays/{play_id}/reveal")
async def reveal(
    play_id: PlayId, body: RevealIn, current: CurrentPlayer, request: Request
) -> PlayOut:
    """Uncover grid ``grid`` (1..4); the fourth shows the bonus grid and the lot."""
    # The reveal desk uncovers the grids asked for together in one transaction.
    uncover: RevealDesk = request.app.state.reveal_desk
    return PlayOut.of(await uncover.ask(plays.Reveal(current.player_id, play_id, body.grid)))


@router.get("/plays/{play_id}")
async def get_play(play_id: PlayId, current: CurrentPlayer, reads: ReadsDep) -> PlayOut:
    """One of the player's plays, as far as it is uncovered."""
    player_id = current.player_id
    found = await reads.read(
        lambda connection: plays.view_play(
            connection=connection, player_id=player_id, play_id=play_id
        )
    )
    return PlayOut.of(found)


@router.get("/plays/{play_id}/proof")
async def get_proof(play_id: PlayId, current: CurrentPlayer, reads: ReadsDep) -> ProofOut:
    """The proof that a finished play's unit belongs to its block (docs/proofs.md): 404 for
    another's play, 409 for one not yet fully uncovered."""
    player_id = current.player_id
    found = await reads.read(
        lambda connection: proofs.play_proof(
            connection=connection, player_id=player_id, play_id=play_id
        )
    )
    return ProofOut.of(found)


@router.get("/plays")
def history(
    current: CurrentPlayer,
    reader: ReaderDep,
    limit: Annotated[int, Query(ge=1, le=plays.MAX_PAGE)] = 20,
    before: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> PlayPage:
    """The player's plays, newest first, ``limit`` per page."""
    # In a thread, not at the read desk: a page of many plays would hold up the reads queued
    # behind it.
    with reader.connect() as connection:
        found, next_before = plays.history(
            connection=connection, player_id=current.player_id, limit=limit, before=before
        )
    return PlayPage(plays=[PlayOut.of(p) for p in found], next_before=next_before)
