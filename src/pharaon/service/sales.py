"""Purchases: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, atomically.

Purchases that arrive together are sold in one database transaction (:func:`buy_many`, fed by
:mod:`pharaon.service.desk`): one commit, so one disk flush, for all of them (group commit),
and the rows every purchase touches (the block, the operator accounts, the audit head) are
locked once per batch instead of once per purchase. Each purchase runs in its own savepoint:
one that is refused (short balance, sold out, self-excluded, a conflicting key) is undone alone
and the others go on.

The unit is taken with one ``UPDATE blocks SET next_serial = next_serial + 1 ... RETURNING``:
the block's row lock (PostgreSQL) or the database write lock (SQLite, ``BEGIN IMMEDIATE``)
orders buyers, so serials are sold in order, none twice and none skipped. Every writer locks
rows in the same order (players' accounts by id, blocks by price, operator accounts by id, the
audit head), so concurrent purchases never deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from sqlalchemy import Connection, bindparam, case, exists, insert, select, update
from sqlalchemy.orm import Session

from pharaon.game.rules import rules
from pharaon.service import audit, blocks, idempotency, ledger, limits
from pharaon.service.errors import (
    InsufficientFundsError,
    InvalidError,
    ServiceError,
    SoldOutError,
)
from pharaon.service.plays import PlayView, build_view, view_play
from pharaon.store.tables import (
    PRIZES_ACCOUNT,
    SALES_ACCOUNT,
    Account,
    Block,
    Player,
    PlayRow,
    UnitRow,
)

Mode = Literal["jouer", "auto"]
ALL_GRIDS: Final = 0b1111


# Built once: these run for every purchase.
_LOCK_ACCOUNTS = (
    select(Account.id)
    .where(Account.player_id.in_(bindparam("players", expanding=True)))
    .order_by(Account.id)
    .with_for_update()
)
_DEBIT = (
    update(Account)
    .where(
        Account.player_id == bindparam("player"),
        Account.balance_cents >= bindparam("stake"),
        ~exists().where(
            Player.id == bindparam("player"),
            Player.self_excluded_until > bindparam("now"),
        ),
    )
    .values(balance_cents=Account.balance_cents - bindparam("stake"))
    .returning(Account.id, Account.balance_cents)
)
_EXCLUDED_UNTIL = select(Player.self_excluded_until).where(Player.id == bindparam("player"))
_TAKE_UNIT = (
    update(Block)
    .where(Block.price_cents == bindparam("price"), Block.state == "open")
    .values(
        next_serial=Block.next_serial + 1,
        state=case((Block.next_serial == Block.block_size, "sold_out"), else_=Block.state),
    )
    .returning(Block.id, Block.next_serial)
)
_UNIT = select(UnitRow.lot_cents, UnitRow.cells).where(
    UnitRow.block_id == bindparam("block"), UnitRow.serial == bindparam("serial")
)
_CREDIT = (
    update(Account)
    .where(Account.id == bindparam("account"))
    .values(balance_cents=Account.balance_cents + bindparam("lot"))
    .returning(Account.balance_cents)
)
_INSERT_PLAY = insert(PlayRow).returning(PlayRow.id, sort_by_parameter_order=True)


@dataclass(frozen=True, slots=True)
class Order:
    """A player's request for one unit at ``stake_cents``, played in ``mode``."""

    player_id: int
    stake_cents: int
    mode: str
    idempotency_key: str | None


Outcome = PlayView | ServiceError


@dataclass(frozen=True, slots=True)
class _Sale:
    """A unit sold in this transaction, before its play is recorded."""

    index: int
    order: Order
    key_id: int
    account_id: int
    balance_before: int
    balance_after: int
    block_id: int
    serial: int
    lot_cents: int
    cells: bytes


def buy(
    *,
    session: Session,
    player_id: int,
    stake_cents: int,
    mode: str,
    idempotency_key: str | None,
    now: datetime,
) -> PlayView:
    """Sell one unit at ``stake_cents`` to the player; once per idempotency key.

    Raises InsufficientFundsError (402), SelfExcludedError (403), IdempotencyConflictError
    (409), SoldOutError (503), InvalidError (422), BadRequestError (400); on any of them
    nothing has changed.
    """
    (outcome,) = buy_many(
        session=session,
        orders=[Order(player_id, stake_cents, mode, idempotency_key)],
        now=now,
    )
    if isinstance(outcome, ServiceError):
        raise outcome
    return outcome


def buy_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Outcome]:
    """Sell one unit for each order, all in one transaction; each order's play, or the
    :class:`ServiceError` that refused it (and changed nothing), in the orders' order.

    A database error (not a refusal) rolls everything back and is raised. An order that
    repeats the player and idempotency key of an earlier one in ``orders`` is sold after the
    others commit, so it replays the earlier one's play as any retry does.
    """
    outcomes: list[Outcome | None] = [None] * len(orders)
    first: list[tuple[int, Order, str]] = []
    later: list[int] = []
    seen: set[tuple[int, str]] = set()
    for index, order in enumerate(orders):
        try:
            key = _check(order)
        except ServiceError as exc:
            outcomes[index] = exc
            continue
        if (order.player_id, key) in seen:
            later.append(index)
        else:
            seen.add((order.player_id, key))
            first.append((index, order, key))
    sales: list[_Sale] = []
    replays: list[tuple[int, int, int]] = []  # (index, player id, play id)
    play_ids: list[int] = []
    if first:
        try:
            connection = session.connection()
            players = sorted({order.player_id for _, order, _ in first})
            if len(players) > 1:
                # Lock the buyers' accounts up front, in id order, before any block.
                connection.execute(_LOCK_ACCOUNTS, {"players": players})
            # Blocks are locked in price order.
            for index, order, key in sorted(first, key=lambda f: f[1].stake_cents):
                connection.exec_driver_sql("SAVEPOINT sale")
                try:
                    sold = _sell(session, connection, index=index, order=order, key=key, now=now)
                except ServiceError as exc:
                    connection.exec_driver_sql("ROLLBACK TO SAVEPOINT sale")
                    outcomes[index] = exc
                    continue
                connection.exec_driver_sql("RELEASE SAVEPOINT sale")
                if isinstance(sold, _Sale):
                    sales.append(sold)
                else:
                    replays.append((index, order.player_id, sold))
            play_ids = _record(session, connection, sales, now)
            session.commit()
        except BaseException:
            session.rollback()
            raise
    for sale, play_id in zip(sales, play_ids, strict=True):
        outcomes[sale.index] = build_view(
            play_id=play_id,
            cells=sale.cells,
            **_play_fields(sale, now),
        )
    for index, player_id, play_id in replays:
        try:
            outcomes[index] = view_play(session=session, player_id=player_id, play_id=play_id)
        except ServiceError as exc:
            outcomes[index] = exc
    if later:
        again = buy_many(session=session, orders=[orders[i] for i in later], now=now)
        for index, outcome in zip(later, again, strict=True):
            outcomes[index] = outcome
    return [o for o in outcomes if o is not None]


def _check(order: Order) -> str:
    """The order's idempotency key, once the order is known to be well formed."""
    key = idempotency.check_key(order.idempotency_key)
    try:
        rules().multiplier(order.stake_cents)
    except ValueError as exc:
        raise InvalidError(str(exc)) from exc
    if order.mode not in ("jouer", "auto"):
        raise InvalidError(f"mode must be 'jouer' or 'auto', got {order.mode!r}")
    return key


def _sell(
    session: Session, connection: Connection, *, index: int, order: Order, key: str, now: datetime
) -> _Sale | int:
    """Debit, take the unit and credit its lot for one order; or the id of the play that
    its idempotency key already bought."""
    claim = idempotency.claim(
        session,
        player_id=order.player_id,
        key=key,
        digest=idempotency.request_digest(
            "play", {"stake_cents": order.stake_cents, "mode": order.mode}
        ),
        now=now,
    )
    if claim.replay_of is not None:
        return claim.replay_of
    stake = order.stake_cents
    debited = connection.execute(
        _DEBIT, {"player": order.player_id, "stake": stake, "now": now}
    ).first()
    if debited is None:
        excluded = connection.execute(_EXCLUDED_UNTIL, {"player": order.player_id}).scalar_one()
        limits.check_not_excluded(excluded, now)
        raise InsufficientFundsError(f"the balance is less than the stake of {stake} cents")
    account_id, after_stake = int(debited[0]), int(debited[1])
    taken = connection.execute(_TAKE_UNIT, {"price": stake}).first()
    if taken is None:
        # Sold out: open the next block. If a concurrent buyer opened it first, open_next
        # waited for its commit, so the second try sees the block on sale either way.
        blocks.open_next(session, price_cents=stake)
        taken = connection.execute(_TAKE_UNIT, {"price": stake}).first()
    if taken is None:
        raise SoldOutError(f"no unit is left on sale at {stake} cents")
    block_id, serial = int(taken[0]), int(taken[1]) - 1
    lot, cells = connection.execute(_UNIT, {"block": block_id, "serial": serial}).one()
    after = after_stake
    if lot:
        after = int(connection.execute(_CREDIT, {"account": account_id, "lot": lot}).scalar_one())
    return _Sale(
        index=index,
        order=order,
        key_id=claim.key_id,
        account_id=account_id,
        balance_before=after_stake + stake,
        balance_after=after,
        block_id=block_id,
        serial=serial,
        lot_cents=int(lot),
        cells=bytes(cells),
    )


def _play_fields(sale: _Sale, now: datetime) -> dict[str, Any]:
    return {
        "created_at": now,
        "stake_cents": sale.order.stake_cents,
        "mode": sale.order.mode,
        "serial": sale.serial,
        "block_id": sale.block_id,
        "revealed": ALL_GRIDS if sale.order.mode == "auto" else 0,
        "prize_cents": sale.lot_cents,
        "balance_before_cents": sale.balance_before,
        "balance_after_cents": sale.balance_after,
    }


def _record(
    session: Session, connection: Connection, sales: list[_Sale], now: datetime
) -> list[int]:
    """The ledger transactions, plays, settled keys and audit records of ``sales``; the
    play ids. The operator accounts and the audit head are locked here, last."""
    if not sales:
        return []
    transaction_ids = ledger.post_many(
        session,
        kind="purchase",
        movements=[
            [
                (s.account_id, -s.order.stake_cents),
                (SALES_ACCOUNT, s.order.stake_cents),
                (PRIZES_ACCOUNT, -s.lot_cents),
                (s.account_id, s.lot_cents),
            ]
            for s in sales
        ],
        now=now,
        settled=frozenset(s.account_id for s in sales),
    )
    play_ids = [
        int(row[0])
        for row in connection.execute(
            _INSERT_PLAY,
            [
                {"player_id": s.order.player_id, "transaction_id": t, **_play_fields(s, now)}
                for s, t in zip(sales, transaction_ids, strict=True)
            ],
        )
    ]
    idempotency.settle_many(
        session, results=[(s.key_id, p) for s, p in zip(sales, play_ids, strict=True)]
    )
    audit.append_many(
        session,
        records=[
            (
                "purchase",
                f"player:{s.order.player_id}",
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
