"""``GET /rules`` (the one source of the page's rules and prize table) and ``GET /health``
(the database reachable)."""

from __future__ import annotations

from fastapi import APIRouter

from pharaon.game.board import BONUS_CELLS, bonus_shapes, cell_position
from pharaon.game.rules import rules
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.web.database import DatabaseDep
from pharaon.web.errors import DATABASE_AWAY_DETAIL
from pharaon.web.schemas import BonusShapeOut, ErrorOut, HealthOut, PrizeOut, RulesOut, SymbolOut

router = APIRouter(tags=["meta"])

HEALTH_TIMEOUT_SECONDS = 2.0


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
        block_size=game.block_size,
        prizes=[
            PrizeOut(lots=t.lots, amount_cents=t.amount_cents, cumulation_only=t.cumulation_only)
            for t in game.prizes
        ],
        bonus_cells=[[n + 1 for n in cell_position(i)] for i in BONUS_CELLS],
        bonus_shapes=[
            BonusShapeOut(name=name, cells=[[r + 1, c + 1] for r, c in cells])
            for name, cells in bonus_shapes().items()
        ],
    )


@router.get(
    "/health",
    responses={503: {"model": ErrorOut, "description": "The database is unavailable"}},
)
async def health(db: DatabaseDep) -> HealthOut:
    """``ok`` when the database answers a ``SELECT 1`` within 2 seconds; otherwise 503
    ``unavailable`` (what a load balancer's check looks at)."""
    if not await db.ping(HEALTH_TIMEOUT_SECONDS):
        raise DatabaseUnavailableError(DATABASE_AWAY_DETAIL)
    return HealthOut(status="ok")
