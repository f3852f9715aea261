"""The sale on PostgreSQL: the steps of :mod:`pharaon.service.sale_steps` run inside the
database, in one call of the function ``pharaon_sell`` (migrations 0002, 0004, 0006), so the
hot rows are held for the time of that call rather than over a dozen round trips. It takes the
same locks in the same order and writes the same rows (tests/service/test_sell_function.py);
it is PostgreSQL's only path, the steps from Python costing more server CPU per purchase there
(docs/performance.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

from pharaon.service import idempotency, limits
from pharaon.service.errors import IdempotencyConflictError, ServiceError
from pharaon.service.orders import Order, UnitSale, Unsold, not_debited, sold_out
from pharaon.store.tables import PRIZES_ACCOUNT, SALES_ACCOUNT

_SELL = text(
    "SELECT * FROM pharaon_sell(CAST(:players AS integer[]), CAST(:stakes AS integer[]), "
    "CAST(:modes AS text[]), CAST(:revealed AS smallint[]), CAST(:keys AS text[]), "
    "CAST(:digests AS text[]), :now, :sales_account, :prizes_account)"
)


def sell(
    session: Session, first: list[tuple[int, Order, str]], unsold: Unsold, now: datetime
) -> list[tuple[UnitSale, int]]:
    """:func:`pharaon.service.sale_steps.sell` in one round trip: one statement, in the
    session's transaction, or on a connection in autocommit committed as it returns."""
    orders = [order for _, order, _ in first]
    rows = session.connection().execute(
        _SELL,
        {
            "players": [o.player_id for o in orders],
            "stakes": [o.stake_cents for o in orders],
            "modes": [o.mode for o in orders],
            "revealed": [o.revealed for o in orders],
            "keys": [key for _, _, key in first],
            "digests": [o.digest for o in orders],
            "now": now,
            "sales_account": SALES_ACCOUNT,
            "prizes_account": PRIZES_ACCOUNT,
        },
    )
    sold = []
    for (index, order, _), row in zip(first, rows, strict=True):
        if row.outcome == "sold":
            sale = UnitSale(
                index=index,
                order=order,
                key_id=int(row.key_id),
                account_id=int(row.account_id),
                balance_before=int(row.balance_before),
                balance_after=int(row.balance_after),
                block_id=int(row.block_id),
                serial=int(row.serial),
                lot_cents=int(row.lot_cents),
                cells=bytes(row.cells),
            )
            sold.append((sale, int(row.play_id)))
        elif row.outcome == "replay":
            unsold.replays.append((index, order.player_id, int(row.play_id)))
        elif row.outcome == "conflict":
            unsold.refused[index] = IdempotencyConflictError(idempotency.CONFLICT)
        elif row.outcome in ("excluded", "short"):
            unsold.refused[index] = not_debited(order, row.excluded_until, now)
        elif row.outcome == "sold_out":
            unsold.refused[index] = sold_out(order)
        elif row.outcome == "loss_limit":
            unsold.refused[index] = _over_loss(session, order, now)
        else:
            raise RuntimeError(f"pharaon_sell answered an unknown outcome {row.outcome!r}")
    return sold


def _over_loss(session: Session, order: Order, now: datetime) -> ServiceError:
    """The refusal of an order ``pharaon_sell`` found over the loss limit, with its figures
    read again (a refusal is rare: the sale itself does not return them)."""
    limit, loss = limits.losses(session.connection(), [order.player_id], now)[order.player_id]
    return limits.loss_refusal(limit, loss, order.stake_cents)
