"""Purchases: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, atomically: to the buyer's account for an ``auto``
play, to the pending account for a ``jouer`` one (moved to the buyer at the fourth grid).

Purchases that arrive together are sold in one database transaction (:func:`sell_many`, fed by
:mod:`pharaon.web.desk`): one commit, so one disk flush, for all of them (group commit), and
the rows every purchase touches (the block, the operator accounts, the audit head) are locked
once per batch instead of once per purchase. SQLite runs the steps statement by statement
(:mod:`pharaon.service.sale_steps`); PostgreSQL runs them inside the database
(:mod:`pharaon.service.sell_function`). An order that is refused (short balance, sold out,
self-excluded, over its loss limit, a conflicting key) has its key given back and its stake
refunded in the same transaction, and the others go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pharaon.service import sale_steps, sell_function
from pharaon.service.errors import ServiceError
from pharaon.service.orders import Order, Outcome, Sale, SoldPlay, UnitSale, Unsold, check
from pharaon.service.plays import view_play
from pharaon.store.engine import make_sessionmaker

__all__ = ["Order", "Outcome", "Sale", "SoldPlay", "buy_many", "sale_sessions", "sell_many"]


def sale_sessions(engine: Engine) -> sessionmaker[Session]:
    """The sessions to sell in over ``engine``. On PostgreSQL a batch is one statement (the
    call of ``pharaon_sell``), a transaction of its own: they run in autocommit, which spares
    the BEGIN and COMMIT round trips. On SQLite the steps share the writer's transaction."""
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(isolation_level="AUTOCOMMIT")
    return make_sessionmaker(engine)


def buy_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Outcome]:
    """Sell one unit for each order, in the caller's transaction; each order's play, or the
    :class:`ServiceError` that refused it (and changed nothing), in the orders' order.

    A database error (not a refusal) is raised: the caller rolls the batch back. A player's
    second order in ``orders`` is sold after the first (so a retry with the same key replays the
    first one's play, as any retry does).
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
