"""Responsible gaming: the moderators (a weekly deposit ceiling and a weekly stake ceiling, set
before the first deposit and the first stake), deposit limits per 24 h, 7 and 30 days, stake
limits per 24 h, 7 and 30 days, a loss limit per 7 days, and self-exclusion (docs/rules.md §6).

A lowered limit applies at once; a raised one only after the raise delay (48 hours unless the
settings say otherwise, ``PHARAON_LIMIT_RAISE_HOURS``), and waits as pending until then. Every
kind is a row of ``deposit_limits`` (its ``period``: ``daily``, ``weekly``, ``monthly`` for
deposits, ``stake_daily`` .. ``stake_monthly`` for stakes, ``loss``), so all follow the same
rule. The two moderators may be changed but never removed. A change names only the limits it
changes: the others, and the raises they wait for, stay as they are.

The stakes of a window are read from the player's stakes per hour (``stake_hours``, added to by
each sale): the window of ``span`` at ``now`` counts the hours from the one ``span`` before the
current hour's start, so it is never shorter than ``span`` (at most an hour longer): a purchase
is refused if those stakes plus its own would pass a stake limit in force.

The net loss of a player at ``now`` (docs/rules.md §6): over the plays bought in the 7 days
before ``now`` (``created_at > now - 7 days``), their stakes minus the lots already credited to
the player (an ``auto`` play's lot, or a ``jouer`` play's once its fourth grid is uncovered; a
lot still in the pending account counts 0). A purchase is refused if that loss plus its stake
would pass the limit in force. The sale reads it for its buyers with their accounts, in one
statement (:func:`net_loss`, :func:`loss_refusal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Integer,
    ScalarSelect,
    bindparam,
    case,
    func,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.orm import Mapped, Session

from pharaon.game.modes import Mode
from pharaon.service import audit, traces
from pharaon.service.errors import (
    DepositLimitReachedError,
    InvalidError,
    LossLimitReachedError,
    ModeratorsRequiredError,
    SelfExcludedError,
    StakeLimitReachedError,
)
from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import (
    PAUSE_KINDS,
    Account,
    Deposit,
    DepositLimit,
    Player,
    PlayRow,
    StakeHour,
)
from pharaon.store.types import UTCDateTime

PERIODS: dict[str, timedelta] = {
    "daily": timedelta(hours=24),
    "weekly": timedelta(days=7),
    "monthly": timedelta(days=30),
}
LOSS = "loss"  # the period of the loss limit's row in deposit_limits
LOSS_WINDOW = timedelta(days=7)
# The stake limits' rows, and the span each counts.
STAKE_PERIODS: dict[str, timedelta] = {f"stake_{p}": span for p, span in PERIODS.items()}
KINDS = (*PERIODS, *STAKE_PERIODS, LOSS)
# Each kind's field in PUT /me/limits, in Limits and in the audit records.
FIELDS = {kind: "loss_weekly_cents" if kind == LOSS else f"{kind}_cents" for kind in KINDS}
# The moderators: set before the first deposit and the first stake, never removed.
MODERATORS = ("weekly", "stake_weekly")
RAISE_DELAY = timedelta(hours=48)  # the default of PHARAON_LIMIT_RAISE_HOURS
MAX_EXCLUSION_DAYS = 3650
# A player's pause, by what the player chose: a short break, or the regulated measure.
COOL_OFF, SELF_EXCLUSION = PAUSE_KINDS


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
    stake_daily_cents: int | None = None
    stake_weekly_cents: int | None = None
    stake_monthly_cents: int | None = None

    def of(self, period: str) -> int | None:
        return {
            "daily": self.daily_cents,
            "weekly": self.weekly_cents,
            "monthly": self.monthly_cents,
            LOSS: self.loss_weekly_cents,
            "stake_daily": self.stake_daily_cents,
            "stake_weekly": self.stake_weekly_cents,
            "stake_monthly": self.stake_monthly_cents,
        }[period]

    @property
    def moderators_set(self) -> bool:
        """Whether the weekly deposit and stake ceilings are in force: deposits and purchases
        wait for them."""
        return all(self.of(period) is not None for period in MODERATORS)


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
        values["daily"],
        values["weekly"],
        values["monthly"],
        tuple(pending),
        values[LOSS],
        values["stake_daily"],
        values["stake_weekly"],
        values["stake_monthly"],
    )


def get_limits(*, connection: Connection, player_id: int, now: datetime) -> Limits:
    rows = connection.execute(select(*LIMIT_COLUMNS).where(DepositLimit.player_id == player_id))
    return in_force(rows, now)


def _is_lower(new: int | None, current: int | None) -> bool:
    return new is not None and (current is None or new < current)


# The audit record of each kind of limit, and the periods it covers, in the order appended.
_RECORDS = (
    ("deposit_limits", tuple(PERIODS)),
    ("loss_limit", (LOSS,)),
    ("stake_limits", tuple(STAKE_PERIODS)),
)
_LOCK_ACCOUNT = (
    select(Account.id).where(Account.player_id == bindparam("player_id")).with_for_update()
)


def set_limits(
    *,
    session: Session,
    player_id: int,
    changes: Mapping[str, int | None],
    now: datetime,
    raise_delay: timedelta = RAISE_DELAY,
    seen: traces.Seen = traces.UNSEEN,
) -> Limits:
    """Set the limits given in ``changes`` (cents by period, :data:`KINDS`; None: no limit),
    each one left out unchanged, its pending raise kept: lowering applies now, raising after
    ``raise_delay``; giving the amount in force cancels a raise of that limit. A moderator
    (:data:`MODERATORS`) once set may not be removed. One audit record per kind given
    (``deposit_limits``, ``loss_limit``, ``stake_limits``): the amounts asked, and in
    ``limits_after`` each period's row as it then stands, ``[amount_cents, pending_cents,
    pending_effective_at]``.

    The player's account row is locked first, as the sale and the deposit lock it: a change
    is ordered with the player's purchases and deposits."""
    for period, value in changes.items():
        if period not in FIELDS:
            raise InvalidError(f"limits are {', '.join(KINDS)}, got {period!r}")
        if value is not None and value < 0:
            raise InvalidError(f"{FIELDS[period]} must be >= 0 or null, got {value}")
    given = sorted(changes)
    connection = session.connection()
    connection.execute(_LOCK_ACCOUNT, {"player_id": player_id}).all()
    # Each period's row made if missing, then all of them locked: of concurrent changes, each
    # reads what the one before it wrote.
    for period in given:
        connection.execute(_ENSURE_LIMIT.on(connection), {"player_id": player_id, "period": period})
    rows: dict[str, LimitRow] = {
        row[0]: row
        for row in connection.execute(
            select(*LIMIT_COLUMNS)
            .where(DepositLimit.player_id == player_id, DepositLimit.period.in_(given))
            .order_by(DepositLimit.period)
            .with_for_update()
        )
    }
    for period in given:
        new = changes[period]
        current, waiting = _in_force(rows[period], now)
        if new is None and period in MODERATORS and (current, waiting) != (None, None):
            raise InvalidError(
                f"{FIELDS[period]} is a moderator: it may be lowered or raised, not removed"
            )
        values: dict[str, object]
        if new == current or _is_lower(new, current):
            values = {"amount_cents": new, "pending_cents": None, "pending_effective_at": None}
        elif waiting is not None and waiting.amount_cents == new:
            continue  # that raise already waits: its delay does not start again
        else:
            values = {
                "amount_cents": current,
                "pending_cents": new,
                "pending_effective_at": now + raise_delay,
            }
        rows[period] = connection.execute(
            update(DepositLimit)
            .where(DepositLimit.player_id == player_id, DepositLimit.period == period)
            .values(**values)
            .returning(*LIMIT_COLUMNS)
        ).one()
    actor = audit.player_actor(player_id)
    records: list[tuple[str, str, dict[str, Any]]] = []
    for kind, covered in _RECORDS:
        periods = [p for p in covered if p in changes]
        if periods:
            payload = {
                "player_id": player_id,
                **{FIELDS[p]: changes[p] for p in periods},
                "limits_after": {p: _row_after(rows[p]) for p in periods},
                **seen.fields(),
            }
            records.append((kind, actor, payload))
    if records:
        audit.append_many(session, records=records, now=now)
    return get_limits(connection=connection, player_id=player_id, now=now)


def _row_after(row: LimitRow) -> list[int | str | None]:
    """A limit's row as an audit record shows it: amount, pending amount, pending time."""
    _, amount_cents, pending_cents, effective_at = row
    return [amount_cents, pending_cents, None if effective_at is None else effective_at.isoformat()]


def moderators_refusal(found: Limits) -> ModeratorsRequiredError | None:
    """Why a deposit or a stake must wait: the moderators are not both in force."""
    if found.moderators_set:
        return None
    return ModeratorsRequiredError(
        "set your moderators first: a weekly deposit ceiling and a weekly stake ceiling "
        "(PUT /api/v1/me/limits, weekly_cents and stake_weekly_cents)"
    )


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


def hour_of(now: datetime) -> datetime:
    """The start of ``now``'s hour: the row of ``stake_hours`` a stake at ``now`` adds to."""
    return now.replace(minute=0, second=0, microsecond=0)


def stake_window_start(now: datetime, span: timedelta) -> datetime:
    """The first hour a stake limit of ``span`` counts at ``now``: never less than ``span``
    before ``now``."""
    return hour_of(now) - span


def stakes_since(player_id: ColumnElement[int | None] | Mapped[int | None], param: str) -> Any:
    """The stakes of player ``player_id`` in the hours since the bound parameter ``param``
    (:func:`stake_window_start`), read by ``stake_hours``' key: a scalar subquery."""
    return (
        select(func.coalesce(func.sum(StakeHour.stakes_cents), 0))
        .where(StakeHour.player_id == player_id, StakeHour.hour >= bindparam(param))
        .scalar_subquery()
    )


def _add_stakes_sql(sql: Parts) -> Any:  # the dialect's own Insert
    new = sql.rows("stakes", player_id=Integer(), stakes_cents=BigInteger())
    insert = sql.insert(StakeHour).from_select(
        ["player_id", "hour", "stakes_cents"],
        select(new.c.player_id, bindparam("hour", type_=UTCDateTime()), new.c.stakes_cents)
        .where(true())  # SQLite reads ON CONFLICT after a bare SELECT as a join's ON
        .order_by(new.c.player_id),
    )
    return insert.on_conflict_do_update(
        index_elements=["player_id", "hour"],
        set_={"stakes_cents": StakeHour.stakes_cents + insert.excluded.stakes_cents},
    )


_ADD_STAKES = PerDialect(_add_stakes_sql)


def add_stakes(session: Session, *, stakes: dict[int, int], now: datetime) -> None:
    """Add each player's ``stakes`` (cents, by player id) to their hour at ``now``, in the
    caller's transaction (the sale's, which holds the buyers' accounts locked)."""
    if stakes:
        connection = session.connection()
        connection.execute(
            _ADD_STAKES.on(connection),
            {
                "stakes": [{"player_id": p, "stakes_cents": c} for p, c in sorted(stakes.items())],
                "hour": hour_of(now),
            },
        )


def stake_refusal(
    row: LimitRow, staked_cents: int | None, stake_cents: int, now: datetime
) -> StakeLimitReachedError | None:
    """Why a stake of ``stake_cents`` is refused at ``now``, if with ``staked_cents`` (the
    stakes of the limit's window) it would pass the stake limit ``row`` puts in force."""
    limit, _ = _in_force(row, now)
    if limit is None or staked_cents is None or staked_cents + stake_cents <= limit:
        return None
    span = {"stake_daily": "24 hours", "stake_weekly": "7 days", "stake_monthly": "30 days"}
    return StakeLimitReachedError(
        f"stake limit {limit} cents per {span[row[0]]}: {staked_cents} cents staked in the "
        f"period, a stake of {stake_cents} more would pass it"
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


def check_not_excluded(excluded_until: datetime | None, now: datetime, *, kind: str | None) -> None:
    """Refuse a player whose pause until ``excluded_until`` (a ``kind`` of PAUSE_KINDS) is
    still in force at ``now``, calling it by its name: a cool-off or a self-exclusion."""
    until = still_excluded(excluded_until, now)
    if until is not None:
        what = "on a cool-off" if kind == COOL_OFF else "self-excluded"
        raise SelfExcludedError(
            f"{what} until {until.isoformat(timespec='seconds')}: no deposits or plays until then",
            fields={"pause": kind or SELF_EXCLUSION, "until": until.isoformat()},
        )


def check_deposit(*, session: Session, player_id: int, amount_cents: int, now: datetime) -> None:
    """:class:`ModeratorsRequiredError` before the moderators are set;
    :class:`DepositLimitReachedError` if ``amount_cents`` more would pass a limit in force.

    The caller holds the player's account row lock, so concurrent deposits are counted.
    """
    limits = get_limits(connection=session.connection(), player_id=player_id, now=now)
    waiting = moderators_refusal(limits)
    if waiting is not None:
        raise waiting
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
    until = exclude_until(
        session=session, player_id=player_id, until=now + timedelta(days=days), kind=SELF_EXCLUSION
    )
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


def exclude_until(*, session: Session, player_id: int, until: datetime, kind: str) -> datetime:
    """Keep the player from playing and depositing until ``until``, a pause of ``kind`` (one of
    PAUSE_KINDS), or later if a pause already in force ends later (a pause is never shortened;
    the one that ends last gives the pause its name); returns the end in force."""
    # One statement: two pauses asked at once both count, the later end wins with its kind.
    asked = bindparam("until", until, type_=UTCDateTime())
    kept = Player.self_excluded_until > asked
    end = session.execute(
        update(Player)
        .where(Player.id == player_id)
        .values(
            self_excluded_until=case((kept, Player.self_excluded_until), else_=asked),
            pause_kind=case((kept, Player.pause_kind), else_=bindparam("kind", kind)),
        )
        .returning(Player.self_excluded_until)
    ).scalar_one()
    assert end is not None  # set just now
    return end


def still_excluded(until: datetime | None, now: datetime) -> datetime | None:
    """``until``, the end of a self-exclusion, if it is still to come at ``now``; else None."""
    return until if until is not None and until > now else None
