"""``GET /rules`` (the one source of the page's rules and prize table) and ``GET /health``
(the database reachable)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from pharaon.game.board import BONUS_CELLS, cell_position
from pharaon.game.rules import rules
from pharaon.web.observe import HealthCheck
from pharaon.web.schemas import ErrorOut, HealthOut, PrizeOut, RulesOut, SymbolOut

router = APIRouter(tags=["meta"])


@router.get("/rules")
def get_rules() -> RulesOut:
    """The symbols, their gains, the prices, the prize table (at 1 €) and where the bonus grid
    takes its cells."""
    game = rules()
    return RulesOut(
        symbols=[
            SymbolOut(
                code=s.code,
                name=s.name,
                name_en=s.name_en,
                line_cents=s.line_cents,
                bonus_cents=s.bonus_cents,
            )
            for s in game.symbols
        ],
        prices_cents=list(game.prices_cents),
        prizes=[
            PrizeOut(lots=t.lots, amount_cents=t.amount_cents, cumulation_only=t.cumulation_only)
            for t in game.prizes
        ],
        bonus_cells=[[n + 1 for n in cell_position(i)] for i in BONUS_CELLS],
    )


@router.get(
    "/health",
    responses={503: {"model": ErrorOut, "description": "The database is unavailable"}},
)
async def health(request: Request) -> HealthOut:
    """``ok`` when the database answers a ``SELECT 1`` within 2 seconds; otherwise 503
    ``unavailable``."""
    check: HealthCheck = request.app.state.health
    await check.check()
    return HealthOut(status="ok")
