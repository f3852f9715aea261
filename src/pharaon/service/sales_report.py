"""Sales for the back office: per price and per day, stakes, lots won, the realised payout rate
against the planned one, and the liability (lots still to be won in blocks on sale)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import Connection, func, select

from pharaon.game.rules import rules
from pharaon.service import blocks
from pharaon.store.dialect import utc_day
from pharaon.store.tables import PlayRow


@dataclass(frozen=True, slots=True)
class SalesLine:
    """One price on one UTC day; ``payout_bp``: lots won per stakes, in basis points."""

    day: date
    price_cents: int
    plays: int
    stakes_cents: int
    prizes_cents: int
    payout_bp: int | None


@dataclass(frozen=True, slots=True)
class SalesReport:
    lines: tuple[SalesLine, ...]
    stakes_cents: int
    prizes_cents: int
    payout_bp: int | None
    planned_payout_bp: int
    liability_cents: int


def _rate(prizes: int, stakes: int) -> int | None:
    return prizes * 10_000 // stakes if stakes else None


def sales_report(
    *, connection: Connection, since: datetime | None = None, until: datetime | None = None
) -> SalesReport:
    """Plays from ``since`` (inclusive) to ``until`` (exclusive), grouped per day and price."""
    day = utc_day(connection, PlayRow.created_at).label("day")
    query = (
        select(
            day,
            PlayRow.stake_cents,
            func.count(),
            func.sum(PlayRow.stake_cents),
            func.sum(PlayRow.prize_cents),
        )
        .group_by(day, PlayRow.stake_cents)
        .order_by(day, PlayRow.stake_cents)
    )
    if since is not None:
        query = query.where(PlayRow.created_at >= since)
    if until is not None:
        query = query.where(PlayRow.created_at < until)
    lines = tuple(
        SalesLine(
            date.fromisoformat(str(d)),
            int(price),
            int(n),
            int(stakes),
            int(prizes),
            _rate(int(prizes), int(stakes)),
        )
        for d, price, n, stakes, prizes in connection.execute(query)
    )
    stakes = sum(line.stakes_cents for line in lines)
    prizes = sum(line.prizes_cents for line in lines)
    # The blocks on sale and those approved to follow them; one loaded but not approved is
    # not yet the operator's promise (an auditor may refuse it).
    liability = sum(
        lot * n
        for b in blocks.list_blocks(connection=connection)
        if b.state == "open" or (b.state == "loaded" and b.approved_at is not None)
        for lot, n in b.remaining_lots
    )
    return SalesReport(
        lines,
        stakes,
        prizes,
        _rate(prizes, stakes),
        rules().payout_percent * 100,
        liability,
    )
