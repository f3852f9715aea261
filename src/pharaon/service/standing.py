"""A player's standing, as ``GET /me`` shows it: the balance, the limits in force, the
self-exclusion, an operator's suspension and the reality check's interval, read in one
statement (so from one snapshot, with no transaction around it: it can go through
:func:`pharaon.store.engine.make_reader`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, bindparam, select

from pharaon.service import limits, measures
from pharaon.service.errors import NotFoundError
from pharaon.store.tables import Account, DepositLimit, Player

# One row per limit the player has set (at most one per period), or one row of NULL limits.
_STANDING = (
    select(
        Account.balance_cents,
        Player.self_excluded_until,
        Player.pause_kind,
        Player.reality_check_minutes,
        Player.suspended_at,
        Player.suspended_until,
        Player.created_at,
        Player.verified_at,
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
    created_at: datetime  # when the account was opened
    # What the pause in force is (limits.PAUSE_KINDS): None with none in force.
    pause_kind: str | None = None
    reality_check_minutes: int | None = None  # None: off
    # An operator's suspension in force (service/measures.py), and its end (None: none set).
    suspended: bool = False
    suspended_until: datetime | None = None
    # When its identity was verified (None: provisional; service/identity.py).
    verified_at: datetime | None = None


def look_up(*, connection: Connection, player_id: int, now: datetime) -> Standing:
    """The standing of ``player_id`` at ``now``; :class:`NotFoundError` if there is no such
    player."""
    rows = connection.execute(_STANDING, {"player": player_id}).all()
    if not rows:
        raise NotFoundError(f"no player {player_id}")
    first = rows[0]
    balance, until, pause, reality, suspended_at, suspended_until, created_at = first[:7]
    verified_at = first[7]
    paused = limits.still_excluded(until, now)
    suspended = measures.in_force(suspended_at, suspended_until, now)
    set_limits = [
        (str(period), amount, pending, effective_at)
        for *_, period, amount, pending, effective_at in rows
        if period is not None
    ]
    return Standing(
        balance_cents=int(balance),
        limits=limits.in_force(set_limits, now),
        self_excluded_until=paused,
        pause_kind=pause if paused else None,
        reality_check_minutes=reality,
        suspended=suspended,
        suspended_until=suspended_until if suspended else None,
        created_at=created_at,
        verified_at=verified_at,
    )
