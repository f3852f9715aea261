"""A player's standing, as ``GET /me`` shows it: the balance, the limits in force, the
self-exclusion and the reality check's interval, read in one statement (so from one snapshot,
with no transaction around it: it can go through :func:`pharaon.store.engine.make_reader`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, bindparam, select

from pharaon.service import limits
from pharaon.service.errors import NotFoundError
from pharaon.store.tables import Account, DepositLimit, Player

# One row per limit the player has set (at most one per period), or one row of NULL limits.
_STANDING = (
    select(
        Account.balance_cents,
        Player.self_excluded_until,
        Player.reality_check_minutes,
        *limits.LIMIT_COLUMNS,
    )
    .join_from(Player, Account, Account.player_id == Player.id)
    .outerjoin(DepositLimit, DepositLimit.player_id == Player.id)
    .where(Player.id == bindparam("player"))
)


@dataclass(frozen=True, slots=True)
class Standing:
    balance_cents: int
    limits: limits.Limits
    self_excluded_until: datetime | None  # None unless excluded at the time of the look-up
    reality_check_minutes: int | None = None  # None: off


def look_up(*, connection: Connection, player_id: int, now: datetime) -> Standing:
    """The standing of ``player_id`` at ``now``; :class:`NotFoundError` if there is no such
    player."""
    rows = connection.execute(_STANDING, {"player": player_id}).all()
    if not rows:
        raise NotFoundError(f"no player {player_id}")
    balance, until, reality = rows[0][0], rows[0][1], rows[0][2]
    set_limits = [
        (str(period), amount, pending, effective_at)
        for _, _, _, period, amount, pending, effective_at in rows
        if period is not None
    ]
    return Standing(
        balance_cents=int(balance),
        limits=limits.in_force(set_limits, now),
        self_excluded_until=limits.still_excluded(until, now),
        reality_check_minutes=reality,
    )
