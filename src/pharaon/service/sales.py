"""Purchases: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, atomically: to the buyer's account for an ``auto``
play, to the pending account for a ``jouer`` one (moved to the buyer at the fourth grid).

This is the one sale, on both databases: :func:`sell` sells a batch of orders in the caller's
transaction, statement by statement, each step one statement for the whole batch (claim the
keys, lock the buyers' accounts, then read and check their limits, take the units, count the
stakes, move the money with the ledger, record the plays and append the audit records). A
batch of one is a purchase alone; purchases that arrive together are sold together by the
writer (``web/database.py``), so the rows every purchase touches (the block, the operator
accounts, the audit head) are locked, and the transaction committed, once per batch: group
commit.

Units are taken from the open block at each price, from one of its runs of serials
(:mod:`pharaon.service.runs`): its ``next_serial`` read with the row locked (``FOR UPDATE`` on
PostgreSQL; SQLite's write lock is held from ``BEGIN IMMEDIATE``) and moved past the units
taken, so within a run serials are sold in order, none twice and none skipped. Every writer
locks rows in the same order (idempotency keys, players' accounts by id, runs by price,
operator accounts by id, the audit head), so concurrent purchases do not deadlock.

An order that is refused (short balance, sold out, self-excluded, over its loss limit, a
conflicting key) has its key given back and its stake refunded in the same transaction, and
the others go on. Nothing is committed here: the caller commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Insert,
    Integer,
    Select,
    String,
    bindparam,
    case,
    insert,
    select,
)
from sqlalchemy.orm import Session

from pharaon.game.modes import Mode
from pharaon.service import audit, idempotency, ledger, limits, measures, runs
from pharaon.service.errors import ServiceError
from pharaon.service.orders import (
    Order,
    Sale,
    SoldPlay,
    UnitSale,
    Unsold,
    check,
    not_debited,
    sold_out,
)
from pharaon.service.plays import view_play
from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import (
    PENDING_ACCOUNT,
    PRIZES_ACCOUNT,
    SALES_ACCOUNT,
    Account,
    DepositLimit,
    Player,
    PlayRow,
    UnitRow,
)
from pharaon.store.types import UTCDateTime

# Built once: these run for every batch. A batch's rows are one parameter (store/dialect.py),
# so each statement has the same text whatever the batch's size.
# The limits a purchase reads: the moderators' two (both must be in force), the stake limits
# and the loss limit.
_SALE_LIMITS = ("weekly", *limits.STAKE_PERIODS, limits.LOSS)


def _lock_buyers_sql(sql: Parts) -> Select[*tuple[Any, ...]]:
    return (
        select(Account.player_id, Account.id, Account.balance_cents)
        .where(sql.one_of(Account.player_id, "buyers"))
        .order_by(Account.id)
        .with_for_update()
    )


def _standing_sql(sql: Parts) -> Select[*tuple[Any, ...]]:
    limit_rows = (DepositLimit.player_id == Player.id) & DepositLimit.period.in_(_SALE_LIMITS)
    # What each limit row counts, read only for the rows a buyer has: the loss of the week
    # (the plays of the window), the stakes of a stake limit's window (the hours').
    counted = case(
        (DepositLimit.period == limits.LOSS, limits.net_loss(Player.id)),
        *[
            (DepositLimit.period == period, limits.stakes_since(Player.id, period))
            for period in limits.STAKE_PERIODS
        ],
        else_=None,
    )
    return (
        select(
            Player.id,
            Player.self_excluded_until,
            Player.pause_kind,
            Player.suspended_at,
            Player.suspended_until,
            *limits.LIMIT_COLUMNS,
            counted,
        )
        .outerjoin(DepositLimit, limit_rows)
        .where(sql.one_of(Player.id, "buyers"))
    )


# Two statements, in this order (docs/architecture.md, "Limits counted after the lock"): the
# buyers' accounts locked in id order (before any block), with their balances; then, once the
# locks are held, what decides whether each may buy: a self-exclusion, an operator's
# suspension, the moderators, the stake limits with their windows' stakes, the loss limit and
# the week's net loss (a row per limit). Read in the same statement as the lock, a window's
# stakes would be those of the statement's snapshot, taken before it waited for the lock: a
# batch committed meanwhile by another server would not be counted.
_LOCK_BUYERS = PerDialect(_lock_buyers_sql)
_STANDING = PerDialect(_standing_sql)
_UNITS = select(UnitRow.serial, UnitRow.lot_cents, UnitRow.cells).where(
    UnitRow.block_id == bindparam("block"),
    UnitRow.serial.between(bindparam("first"), bindparam("last")),
)
# Each play comes back with its unit, which names it: in one INSERT, whatever the order of the
# rows returned.
_PLAY_COLUMNS = {
    "player_id": Integer(),
    "transaction_id": Integer(),
    "stake_cents": Integer(),
    "mode": String(),
    "serial": Integer(),
    "block_id": Integer(),
    "revealed": Integer(),
    "prize_cents": BigInteger(),
    "balance_before_cents": BigInteger(),
    "balance_after_cents": BigInteger(),
}


def _insert_plays_sql(sql: Parts) -> Insert:
    new = sql.rows("new", **_PLAY_COLUMNS)
    return (
        insert(PlayRow)
        .from_select(
            [*_PLAY_COLUMNS, "created_at"],
            select(*[new.c[name] for name in _PLAY_COLUMNS], bindparam("now", type_=UTCDateTime())),
        )
        .returning(PlayRow.id, PlayRow.block_id, PlayRow.serial)
    )


_INSERT_PLAYS = PerDialect(_insert_plays_sql)


@dataclass(frozen=True, slots=True)
class _Wanted:
    """A well-formed order of this batch, its key taken."""

    index: int
    order: Order
    key_id: int


def sell(*, session: Session, requests: Sequence[Order], now: datetime) -> list[Sale]:
    """Sell one unit for each order of ``requests`` in ``session``'s transaction; each order's
    new play (:class:`SoldPlay`, its view not built yet), the earlier play of a retry with the
    same key, or the :class:`ServiceError` that refused it (and changed nothing), in the
    orders' order.

    A player's second order in ``requests`` is sold in a round after the first (so a retry
    with the same key replays the first one's play, as any retry does). A database error (not
    a refusal) is raised: the caller rolls the transaction back.
    """
    outcomes: list[Sale | None] = [None] * len(requests)
    first: list[tuple[int, Order, str]] = []
    later: list[int] = []
    buyers: set[int] = set()
    for index, order in enumerate(requests):
        try:
            key = check(order)
        except ServiceError as exc:
            outcomes[index] = exc
            continue
        if order.player_id in buyers:
            later.append(index)
        else:
            buyers.add(order.player_id)
            first.append((index, order, key))
    unsold = Unsold()
    wanted = _claim(session, first, unsold, now)
    sales = _sell(session, wanted, unsold.refused, now)
    for sale, play_id in zip(sales, _record(session, sales, now), strict=True):
        outcomes[sale.index] = SoldPlay.of(sale, play_id, now)
    for index, error in unsold.refused.items():
        outcomes[index] = error
    for index, player_id, play_id in unsold.replays:
        try:
            outcomes[index] = view_play(
                connection=session.connection(), player_id=player_id, play_id=play_id
            )
        except ServiceError as exc:
            outcomes[index] = exc
    if later:
        again = sell(session=session, requests=[requests[i] for i in later], now=now)
        for index, outcome in zip(later, again, strict=True):
            outcomes[index] = outcome
    return [o for o in outcomes if o is not None]


def _claim(
    session: Session, first: list[tuple[int, Order, str]], unsold: Unsold, now: datetime
) -> list[_Wanted]:
    """Take each order's idempotency key; the orders to sell. A key used before is a replay
    of its play, or a conflict."""
    if not first:
        return []
    claims = idempotency.claim_many(
        session,
        requests=[(order.player_id, key, order.digest) for _, order, key in first],
        now=now,
    )
    wanted: list[_Wanted] = []
    for (index, order, _), claim in zip(first, claims, strict=True):
        if isinstance(claim, ServiceError):
            unsold.refused[index] = claim
        elif claim.replay_of is not None:
            unsold.replays.append((index, order.player_id, claim.replay_of))
        else:
            wanted.append(_Wanted(index, order, claim.key_id))
    return wanted


@dataclass(frozen=True, slots=True)
class _Buyer:
    """A buyer's account as the sale read it, locked."""

    account_id: int
    balance_cents: int
    excluded_until: datetime | None
    pause_kind: str | None  # what the pause until excluded_until is (limits.PAUSE_KINDS)
    suspended: tuple[datetime | None, datetime | None]  # since, until
    # Each limit row of :data:`_SALE_LIMITS` the buyer has, with what its window counts.
    limit_rows: tuple[tuple[limits.LimitRow, int | None], ...]


def _buyers(connection: Connection, wanted: list[_Wanted], now: datetime) -> dict[int, _Buyer]:
    """The buyers of ``wanted`` by player id, their accounts locked until the commit."""
    buyers = sorted({w.order.player_id for w in wanted})
    accounts = {
        int(player_id): (int(account_id), int(balance))
        for player_id, account_id, balance in connection.execute(
            _LOCK_BUYERS.on(connection), {"buyers": buyers}
        )
    }
    # Read after the locks are held: a statement of its own sees every batch committed before.
    standing: dict[int, tuple[datetime | None, str | None, datetime | None, datetime | None]] = {}
    limit_rows: dict[int, list[tuple[limits.LimitRow, int | None]]] = {}
    for (
        player_id,
        until,
        pause_kind,
        suspended_at,
        suspended_until,
        period,
        amount,
        pending,
        effective,
        counted,
    ) in connection.execute(
        _STANDING.on(connection),
        {
            "buyers": buyers,
            "since": limits.loss_window_start(now),
            **{
                period: limits.stake_window_start(now, span)
                for period, span in limits.STAKE_PERIODS.items()
            },
        },
    ):
        standing[player_id] = (until, pause_kind, suspended_at, suspended_until)
        found_rows = limit_rows.setdefault(player_id, [])
        if period is not None:
            window = None if counted is None else int(counted)
            found_rows.append(((period, amount, pending, effective), window))
    return {
        player_id: _Buyer(
            account_id,
            balance,
            standing[player_id][0],
            standing[player_id][1],
            standing[player_id][2:],
            tuple(limit_rows[player_id]),
        )
        for player_id, (account_id, balance) in accounts.items()
    }


def _refusal(order: Order, buyer: _Buyer, now: datetime) -> ServiceError | None:
    """Why ``buyer`` may not buy ``order`` (docs/api.md gives the order of the reasons)."""
    suspended = measures.suspension_refusal(*buyer.suspended, now)
    if suspended is not None:
        return suspended
    waiting = limits.moderators_refusal(limits.in_force([r for r, _ in buyer.limit_rows], now))
    if waiting is not None:
        return waiting
    rows = {row[0]: (row, counted) for row, counted in buyer.limit_rows}
    for period in limits.STAKE_PERIODS:  # the stake limits in order, then the loss limit
        if period in rows:
            stake = limits.stake_refusal(*rows[period], order.stake_cents, now)
            if stake is not None:
                return stake
    loss_row, loss = rows.get(limits.LOSS, (None, None))
    refused = limits.loss_refusal(loss_row, loss, order.stake_cents, now)
    if refused is not None:
        return refused
    excluded = limits.still_excluded(buyer.excluded_until, now) is not None
    if excluded or buyer.balance_cents < order.stake_cents:
        return not_debited(order, buyer.excluded_until, buyer.pause_kind, now)
    return None


def _sell(
    session: Session, wanted: list[_Wanted], refused: dict[int, ServiceError], now: datetime
) -> list[UnitSale]:
    """Take the units of the orders the buyers may pay (their money moves in :func:`_record`);
    the sales, in batch order. The refused orders' keys are given back."""
    if not wanted:
        return []
    connection = session.connection()
    buyers = _buyers(connection, wanted, now)
    for w in wanted:
        refusal = _refusal(w.order, buyers[w.order.player_id], now)
        if refusal is not None:
            refused[w.index] = refusal
    taken = _take_units(session, [w for w in wanted if w.index not in refused])
    for w in wanted:
        if w.index not in refused and w.index not in taken:
            refused[w.index] = sold_out(w.order)
    idempotency.release_many(session, key_ids=[w.key_id for w in wanted if w.index in refused])
    units: dict[tuple[int, int], tuple[int, bytes]] = {}
    for block_id, first, last in _ranges(taken.values()):
        for serial, lot, cells in connection.execute(
            _UNITS, {"block": block_id, "first": first, "last": last}
        ):
            units[(block_id, int(serial))] = (int(lot), bytes(cells))
    sales = []
    for w in wanted:
        if w.index not in taken:
            continue
        buyer = buyers[w.order.player_id]
        block_id, serial = taken[w.index]
        lot, cells = units[(block_id, serial)]
        sales.append(
            UnitSale(
                index=w.index,
                order=w.order,
                key_id=w.key_id,
                account_id=buyer.account_id,
                balance_before=buyer.balance_cents,
                balance_after=buyer.balance_cents - w.order.stake_cents + lot,
                block_id=block_id,
                serial=serial,
                lot_cents=lot,
                cells=cells,
            )
        )
    # What the stake limits count (one sale per buyer in a batch's round).
    limits.add_stakes(
        session, stakes={s.order.player_id: s.order.stake_cents for s in sales}, now=now
    )
    return sales


def _take_units(session: Session, paid: list[_Wanted]) -> dict[int, tuple[int, int]]:
    """The next unsold units at each order's price, one per order (:mod:`runs`); (block id,
    serial) by order index. An order missing from the answer found its price sold out."""
    taken: dict[int, tuple[int, int]] = {}
    for price in sorted({w.order.stake_cents for w in paid}):  # runs locked in price order
        needed = [w for w in paid if w.order.stake_cents == price]
        units = runs.take(session, price_cents=price, count=len(needed))
        taken.update((w.index, unit) for w, unit in zip(needed, units, strict=False))
    return taken


def _ranges(units: Iterable[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(block id, first serial, last serial) of each stretch of consecutive serials of
    ``units`` (block id, serial): one read each (a batch's units lie in a run or a few)."""
    stretches: list[tuple[int, int, int]] = []
    for block_id, serial in sorted(set(units)):
        if stretches and stretches[-1][0] == block_id and stretches[-1][2] == serial - 1:
            stretches[-1] = (block_id, stretches[-1][1], serial)
        else:
            stretches.append((block_id, serial, serial))
    return stretches


def _record(session: Session, sales: list[UnitSale], now: datetime) -> list[int]:
    """The ledger transactions and the balances they move, plays, settled keys and audit
    records of ``sales``; the play ids. The operator accounts and the audit head are locked
    here, last."""
    if not sales:
        return []
    # The buyers' balances move with the operator's, in one update (their accounts are locked
    # since _buyers): the stake, and an auto play's lot; a jouer play's lot waits in the
    # pending account until its fourth grid (plays.reveal): credited now, it would show in the
    # balance, or let a purchase spend it, before its time.
    transaction_ids = ledger.post_many(
        session,
        kind="purchase",
        movements=[
            [
                (s.account_id, -s.order.stake_cents),
                (SALES_ACCOUNT, s.order.stake_cents),
                (PRIZES_ACCOUNT, -s.lot_cents),
                (s.account_id if s.order.mode == Mode.AUTO else PENDING_ACCOUNT, s.lot_cents),
            ]
            for s in sales
        ],
        now=now,
    )
    connection = session.connection()
    play_of = {
        (int(block_id), int(serial)): int(play_id)
        for play_id, block_id, serial in connection.execute(
            _INSERT_PLAYS.on(connection),
            {
                "new": [
                    {"player_id": s.order.player_id, "transaction_id": t, **s.columns()}
                    for s, t in zip(sales, transaction_ids, strict=True)
                ],
                "now": now,
            },
        )
    }
    play_ids = [play_of[(s.block_id, s.serial)] for s in sales]
    idempotency.settle_many(
        session, results=[(s.key_id, p) for s, p in zip(sales, play_ids, strict=True)]
    )
    audit.append_many(
        session,
        records=[
            (
                "purchase",
                audit.player_actor(s.order.player_id),
                {
                    "play_id": p,
                    "player_id": s.order.player_id,
                    "block_id": s.block_id,
                    "serial": s.serial,
                    "stake_cents": s.order.stake_cents,
                    "lot_cents": s.lot_cents,
                    "transaction_id": t,
                },
            )
            for s, p, t in zip(sales, play_ids, transaction_ids, strict=True)
        ],
        now=now,
    )
    return play_ids
