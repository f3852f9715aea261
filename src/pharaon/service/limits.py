"""Responsible gaming: deposit limits per 24 h, 7 and 30 days, a loss limit per 7 days, and
self-exclusion.

A lowered limit applies at once; a raised one (or its removal) only after 24 hours, and waits
as pending until then. The loss limit is a row of ``deposit_limits`` of period ``loss``, so it
follows the same rule.

The net loss of a player at ``now`` (docs/rules.md §6): over the plays bought in the 7 days
before ``now`` (``created_at > now - 7 days``), their stakes minus the lots already credited to
the player (an ``auto`` play's lot, or a ``jouer`` play's once its fourth grid is uncovered; a
lot still in the pending account counts 0). A purchase is refused if that loss plus its stake
would pass the limit in force. The sale reads it for its buyers with their accounts, in one
statement (:func:`net_loss`, :func:`loss_refusal`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import (
    ColumnElement,
    Connection,
    ScalarSelect,
    bindparam,
    case,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session

from pharaon.game.modes import Mode
from pharaon.service import audit, traces
from pharaon.service.errors import (
    DepositLimitReachedError,
    InvalidError,
    LossLimitReachedError,
    SelfExcludedError,
)
from pharaon.store.dialect import PerDialect
from pharaon.store.tables import Deposit, DepositLimit, Player, PlayRow
from pharaon.store.types import UTCDateTime

PERIODS: dict[str, timedelta] = {
    "daily": timedelta(hours=24),
    "weekly": timedelta(days=7),
    "monthly": timedelta(days=30),
}
LOSS = "loss"  # the period of the loss limit's row in deposit_limits
LOSS_WINDOW = timedelta(days=7)
KINDS = (*PERIODS, LOSS)
RAISE_DELAY = timedelta(hours=24)
MAX_EXCLUSION_DAYS = 3650


@dataclass(frozen=True, slots=True)
class Pending:
    period: str
    amount_cents: int | None
    effective_at: datetime


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits in force (None: no limit) and the raises still waiting."""

    daily_cents: int | None
    weekly_cents: int | None
    monthly_cents: int | None
    pending: tuple[Pending, ...]
    loss_weekly_cents: int | None = None

    def of(self, period: str) -> int | None:
        return {
            "daily": self.daily_cents,
            "weekly": self.weekly_cents,
            "monthly": self.monthly_cents,
            LOSS: self.loss_weekly_cents,
        }[period]


# A row of deposit_limits: period, amount_cents, pending_cents, pending_effective_at.
LimitRow = tuple[str, int | None, int | None, datetime | None]
LIMIT_COLUMNS = (
    DepositLimit.period,
    DepositLimit.amount_cents,
    DepositLimit.pending_cents,
    DepositLimit.pending_effective_at,
)
_ENSURE_LIMIT = PerDialect(
    lambda sql: (
        sql.insert(DepositLimit)
        .values(amount_cents=None, pending_cents=None, pending_effective_at=None)
        .on_conflict_do_nothing(index_elements=["player_id", "period"])
    )
)


def _in_force(row: LimitRow | None, now: datetime) -> tuple[int | None, Pending | None]:
    if row is None:
        return None, None
    period, amount_cents, pending_cents, effective_at = row
    if effective_at is not None:
        if effective_at <= now:
            return pending_cents, None
        return amount_cents, Pending(period, pending_cents, effective_at)
    return amount_cents, None


def in_force(rows: Iterable[LimitRow], now: datetime) -> Limits:
    """The limits that ``rows`` (a player's, as :data:`LIMIT_COLUMNS` reads them) put in force
    at ``now``, and the raises still waiting."""
    by_period = {row[0]: row for row in rows}
    values: dict[str, int | None] = {}
    pending: list[Pending] = []
    for period in KINDS:
        value, waiting = _in_force(by_period.get(period), now)
        values[period] = value
        if waiting is not None:
            pending.append(waiting)
    return Limits(
        values["daily"], values["weekly"], values["monthly"], tuple(pending), values[LOSS]
    )


def get_limits(*, connection: Connection, player_id: int, now: datetime) -> Limits:
    rows = connection.execute(select(*LIMIT_COLUMNS).where(DepositLimit.player_id == player_id))
    return in_force(rows, now)


def _is_lower(new: int | None, current: int | None) -> bool:
    return new is not None and (current is None or new < current)


def set_limits(
    *,
    session: Session,
    player_id: int,
    daily_cents: int | None,
    weekly_cents: int | None,
    monthly_cents: int | None,
    now: datetime,
    loss_weekly_cents: int | Literal["keep"] | None = "keep",
    seen: traces.Seen = traces.UNSEEN,
) -> Limits:
    """Set the three deposit limits and, unless ``"keep"``, the loss limit (None: no limit);
    lowering applies now, raising in 24 hours. Each change is an audit record."""
    wanted = {"daily": daily_cents, "weekly": weekly_cents, "monthly": monthly_cents}
    if loss_weekly_cents != "keep":
        wanted[LOSS] = loss_weekly_cents
    for period, value in wanted.items():
        if value is not None and value < 0:
            raise InvalidError(f"{_field(period)} must be >= 0 or null, got {value}")
    connection = session.connection()
    # Each period's row made if missing, then all of them locked: of concurrent changes, each
    # reads what the one before it wrote.
    for period in sorted(wanted):
        connection.execute(_ENSURE_LIMIT.on(connection), {"player_id": player_id, "period": period})
    rows = {
        row[0]: row
        for row in connection.execute(
            select(*LIMIT_COLUMNS)
            .where(DepositLimit.player_id == player_id, DepositLimit.period.in_(sorted(wanted)))
            .order_by(DepositLimit.period)
            .with_for_update()
        )
    }
    for period, new in wanted.items():
        current, waiting = _in_force(rows[period], now)
        values: dict[str, object]
        if new == current or _is_lower(new, current):
            values = {"amount_cents": new, "pending_cents": None, "pending_effective_at": None}
        elif waiting is not None and waiting.amount_cents == new:
            continue  # that raise already waits: its 24 hours do not start again
        else:
            values = {
                "amount_cents": current,
                "pending_cents": new,
                "pending_effective_at": now + RAISE_DELAY,
            }
        connection.execute(
            update(DepositLimit)
            .where(DepositLimit.player_id == player_id, DepositLimit.period == period)
            .values(**values)
        )
    audit.append(
        session,
        kind="deposit_limits",
        actor=audit.player_actor(player_id),
        payload={
            "player_id": player_id,
            **{f"{p}_cents": wanted[p] for p in PERIODS},
            **seen.fields(),
        },
        now=now,
    )
    if LOSS in wanted:
        audit.append(
            session,
            kind="loss_limit",
            actor=audit.player_actor(player_id),
            payload={"player_id": player_id, "loss_weekly_cents": wanted[LOSS], **seen.fields()},
            now=now,
        )
    return get_limits(connection=connection, player_id=player_id, now=now)


def _field(period: str) -> str:
    return "loss_weekly_cents" if period == LOSS else f"{period}_cents"


# A play's lot as credited to the player so far: an auto play's at once, a jouer play's at
# its fourth grid (until then it waits in the pending account).
CREDITED_LOT = case(
    (or_(PlayRow.mode == Mode.AUTO, PlayRow.revealed == 15), PlayRow.prize_cents), else_=0
)


def net_loss(player_id: ColumnElement[int | None] | Mapped[int | None]) -> ScalarSelect[int]:
    """The net loss of player ``player_id`` over the window since the bound parameter ``since``
    (:func:`loss_window_start`): stakes minus the lots already credited (see above), read by
    ``ix_plays_player_time``."""
    return (
        select(func.coalesce(func.sum(PlayRow.stake_cents - CREDITED_LOT), 0))
        .where(PlayRow.player_id == player_id, PlayRow.created_at > bindparam("since"))
        .scalar_subquery()
    )


def loss_window_start(now: datetime) -> datetime:
    """Where the loss limit's window begins for a purchase at ``now``."""
    return now - LOSS_WINDOW


def loss_refusal(
    row: LimitRow | None, loss_cents: int | None, stake_cents: int, now: datetime
) -> LossLimitReachedError | None:
    """Why a stake of ``stake_cents`` is refused at ``now``, if it would take the net loss
    (``loss_cents``) past the loss limit that ``row`` (the player's loss row, if any) puts in
    force; None if it would not."""
    limit, _ = _in_force(row, now)
    if limit is None or loss_cents is None or loss_cents + stake_cents <= limit:
        return None
    return LossLimitReachedError(
        f"weekly loss limit {limit} cents: a net loss of {loss_cents} cents over the "
        f"last 7 days, a stake of {stake_cents} more would pass it"
    )


def check_not_excluded(excluded_until: datetime | None, now: datetime) -> None:
    until = still_excluded(excluded_until, now)
    if until is not None:
        raise SelfExcludedError(
            f"self-excluded until {until.isoformat(timespec='seconds')}: "
            "no deposits or plays until then"
        )


def check_deposit(*, session: Session, player_id: int, amount_cents: int, now: datetime) -> None:
    """:class:`DepositLimitReachedError` if ``amount_cents`` more would pass a limit in force.

    The caller holds the player's account row lock, so concurrent deposits are counted.
    """
    limits = get_limits(connection=session.connection(), player_id=player_id, now=now)
    for period, span in PERIODS.items():
        limit = limits.of(period)
        if limit is None:
            continue
        deposited = session.execute(
            select(func.coalesce(func.sum(Deposit.amount_cents), 0)).where(
                Deposit.player_id == player_id, Deposit.created_at > now - span
            )
        ).scalar_one()
        if deposited + amount_cents > limit:
            raise DepositLimitReachedError(
                f"{period} deposit limit {limit} cents: {deposited} deposited in the period, "
                f"{amount_cents} more would pass it"
            )


def self_exclude(
    *,
    session: Session,
    player_id: int,
    days: int,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> datetime:
    """Exclude the player for ``days`` (1..3650); an exclusion is never shortened."""
    if not 1 <= days <= MAX_EXCLUSION_DAYS:
        raise InvalidError(f"days must be 1..{MAX_EXCLUSION_DAYS}, got {days}")
    until = exclude_until(session=session, player_id=player_id, until=now + timedelta(days=days))
    audit.append(
        session,
        kind="self_exclusion",
        actor=audit.player_actor(player_id),
        payload={
            "player_id": player_id,
            "days": days,
            "until": until.isoformat(),
            **seen.fields(),
        },
        now=now,
    )
    return until


def exclude_until(*, session: Session, player_id: int, until: datetime) -> datetime:
    """Keep the player from playing and depositing until ``until``, or later if a pause
    already in force ends later (a pause is never shortened); returns the end in force."""
    # One statement: two pauses asked at once both count, the later end wins.
    asked = bindparam("until", until, type_=UTCDateTime())
    later = case((Player.self_excluded_until > asked, Player.self_excluded_until), else_=asked)
    end = session.execute(
        update(Player)
        .where(Player.id == player_id)
        .values(self_excluded_until=later)
        .returning(Player.self_excluded_until)
    ).scalar_one()
    assert end is not None  # set just now
    return end


def still_excluded(until: datetime | None, now: datetime) -> datetime | None:
    """``until``, the end of a self-exclusion, if it is still to come at ``now``; else None."""
    return until if until is not None and until > now else None
