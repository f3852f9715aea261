"""Purchases: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, atomically: to the buyer's account for an ``auto``
play, to the pending account for a ``jouer`` one (moved to the buyer at the fourth grid).

Purchases that arrive together are sold together (:func:`sell_many`, fed by
:mod:`pharaon.web.desk`), in the caller's session, which this module neither begins, commits nor
rolls back. The rows every purchase touches (the block, the operator accounts, the audit head)
are locked once per batch instead of once per purchase, and a caller that commits the batch at
once gives it one commit, so one disk flush (group commit). SQLite runs the steps statement by
statement (:mod:`pharaon.service.sale_steps`), in the session's transaction, which the caller
commits. PostgreSQL runs them inside the database, in one statement (the call of
``pharaon_sell``, :mod:`pharaon.service.sell_function`; a second for the players with a second
order in the batch): part of the session's transaction if it has one; on a connection in
autocommit (the sales desk's), a transaction of its own, committed when it returns. An order
that is refused (short balance, sold out, self-excluded, over its loss limit, a conflicting
key) has its key given back and its stake refunded in the same transaction, and the others go
on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from pharaon.service import sale_steps, sell_function
from pharaon.service.errors import ServiceError
from pharaon.service.orders import Order, Outcome, Sale, SoldPlay, UnitSale, Unsold, check
from pharaon.service.plays import view_play

__all__ = ["Order", "Outcome", "Sale", "SoldPlay", "buy_many", "sell_many"]


def buy_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Outcome]:
    """Sell one unit for each order in ``session``; each order's play, or the
    :class:`ServiceError` that refused it (and changed nothing), in the orders' order.

    Nothing is committed here. On SQLite the sale is in the session's transaction, for the
    caller to commit. On PostgreSQL each round of the sale is one statement: in the session's
    transaction if it has one, else (a connection in autocommit) committed as it returns; the
    plays of retries and the figures of a loss refusal are read after it.

    A player's second order in ``orders`` is sold in a round after the first (so a retry with
    the same key replays the first one's play, as any retry does). A database error (not a
    refusal) is raised: the caller rolls back its transaction; in autocommit the rounds that
    returned before it stay committed, and their orders, sold again with the same keys, replay
    their plays.
    """
    return [
        o.view() if isinstance(o, SoldPlay) else o
        for o in sell_many(session=session, orders=orders, now=now)
    ]


def sell_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Sale]:
    """:func:`buy_many`, a new play given as :class:`SoldPlay` (its view not built yet)."""
    outcomes: list[Sale | None] = [None] * len(orders)
    first: list[tuple[int, Order, str]] = []
    later: list[int] = []
    buyers: set[int] = set()
    for index, order in enumerate(orders):
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
    sold: list[tuple[UnitSale, int]] = []  # (sale, play id)
    unsold = Unsold()
    if first:
        on_postgres = session.get_bind().dialect.name == "postgresql"
        sell = sell_function.sell if on_postgres else sale_steps.sell
        sold = sell(session, first, unsold, now)
        for index, error in unsold.refused.items():
            outcomes[index] = error
    for sale, play_id in sold:
        outcomes[sale.index] = SoldPlay.of(sale, play_id, now)
    for index, player_id, play_id in unsold.replays:
        try:
            outcomes[index] = view_play(
                connection=session.connection(), player_id=player_id, play_id=play_id
            )
        except ServiceError as exc:
            outcomes[index] = exc
    if later:
        again = sell_many(session=session, orders=[orders[i] for i in later], now=now)
        for index, outcome in zip(later, again, strict=True):
            outcomes[index] = outcome
    return [o for o in outcomes if o is not None]
