"""Purchases: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, atomically: to the buyer's account for an ``auto``
play, to the pending account for a ``jouer`` one (moved to the buyer at the fourth grid).

Purchases that arrive together are sold in one database transaction (:func:`buy_many`, fed by
:mod:`pharaon.web.desk`): one commit, so one disk flush, for all of them (group commit),
and the rows every purchase touches (the block, the operator accounts, the audit head) are
locked once per batch instead of once per purchase. On SQLite each step is one statement for
the whole batch (claim the keys, debit the stakes, take the units, credit the lots, record:
:func:`_sell_here`); on PostgreSQL the same steps run inside the database, in one call of the
function ``pharaon_sell`` (migration 0002: :func:`_sell_in_postgres`), so the hot rows are
held for the time of that call rather than over a dozen round trips. An order that is refused
(short balance, sold out, self-excluded, a conflicting key) has its key given back and its
stake refunded in the same transaction, and the others go on. A stake that would take the
player's net loss past the weekly loss limit is refused before any debit
(:func:`pharaon.service.limits.over_loss_limit`; ``pharaon_sell`` since migration 0006).

Units are taken from the open block at each price by reading its ``next_serial`` with the row
locked (``FOR UPDATE`` on PostgreSQL; SQLite's write lock is held from ``BEGIN IMMEDIATE``) and
moving it past the units taken, so serials are sold in order, none twice and none skipped.
Every writer locks rows in the same order (idempotency keys, players' accounts by id, blocks
by price, operator accounts by id, the audit head), so concurrent purchases never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, insert, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from pharaon.game.modes import Mode
from pharaon.game.rules import rules
from pharaon.service import audit, blocks, idempotency, ledger, limits
from pharaon.service.errors import (
    IdempotencyConflictError,
    InsufficientFundsError,
    InvalidError,
    ServiceError,
    SoldOutError,
)
from pharaon.service.plays import ALL_GRIDS, PlayView, build_view, view_play
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import (
    PENDING_ACCOUNT,
    PRIZES_ACCOUNT,
    SALES_ACCOUNT,
    Account,
    Block,
    Player,
    PlayRow,
    UnitRow,
)

# Built once: these run for every batch.
_LOCK_ACCOUNTS = (
    select(Account.id)
    .where(Account.player_id.in_(bindparam("players", expanding=True)))
    .order_by(Account.id)
    .with_for_update()
)
_DEBIT = (
    update(Account)
    .where(
        Account.player_id.in_(bindparam("players", expanding=True)),
        Account.balance_cents >= bindparam("stake"),
        Account.player_id.not_in(
            select(Player.id).where(
                Player.id.in_(bindparam("players", expanding=True)),
                Player.self_excluded_until > bindparam("now"),
            )
        ),
    )
    .values(balance_cents=Account.balance_cents - bindparam("stake"))
    .returning(Account.player_id, Account.id, Account.balance_cents)
)
_EXCLUDED_UNTIL = select(Player.id, Player.self_excluded_until).where(
    Player.id.in_(bindparam("players", expanding=True))
)
_OPEN_BLOCK = (
    select(Block.id, Block.next_serial, Block.block_size)
    .where(Block.price_cents == bindparam("price"), Block.state == "open")
    .with_for_update()
)
_ADVANCE = (
    update(Block)
    .where(Block.id == bindparam("block"))
    .values(next_serial=bindparam("next"), state=bindparam("new_state"))
)
_UNITS = select(UnitRow.serial, UnitRow.lot_cents, UnitRow.cells).where(
    UnitRow.block_id == bindparam("block"),
    UnitRow.serial.between(bindparam("first"), bindparam("last")),
)
_INSERT_PLAY = insert(PlayRow).returning(PlayRow.id, sort_by_parameter_order=True)


@dataclass(frozen=True, slots=True)
class Order:
    """A player's request for one unit at ``stake_cents``, played in ``mode``."""

    player_id: int
    stake_cents: int
    mode: Mode
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Sold:
    """A play just sold, committed; :meth:`view` builds what the player sees of it (the
    sales desk leaves that to the buyer's thread, so its own goes on to the next batch)."""

    play_id: int
    cells: bytes
    fields: dict[str, Any]

    def view(self) -> PlayView:
        return build_view(play_id=self.play_id, cells=self.cells, **self.fields)


Outcome = PlayView | ServiceError
Sale = Sold | PlayView | ServiceError  # as Outcome, the new play not yet viewed


@dataclass(frozen=True, slots=True)
class _Unsold:
    """The orders of a batch that are not sold now: refused (index: the error), and retries
    answered by their earlier play (index, player id, play id)."""

    refused: dict[int, ServiceError] = field(default_factory=dict)
    replays: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Wanted:
    """A well-formed order of this batch, its key taken."""

    index: int
    order: Order
    key_id: int


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


def sale_sessions(engine: Engine) -> sessionmaker[Session]:
    """The sessions to sell in over ``engine``. On PostgreSQL a batch is one statement (the
    call of ``pharaon_sell``), a transaction of its own: they run in autocommit, which spares
    the BEGIN and COMMIT round trips (and what else they write is one statement each too). On
    SQLite the steps share the writer's transaction."""
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(isolation_level="AUTOCOMMIT")
    return make_sessionmaker(engine)


def buy_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Outcome]:
    """Sell one unit for each order, all in one transaction; each order's play, or the
    :class:`ServiceError` that refused it (and changed nothing), in the orders' order.

    A database error (not a refusal) rolls everything back and is raised. A player's second
    order in ``orders`` is sold after the first commits (so a retry with the same key replays
    the first one's play, as any retry does).
    """
    return [
        o.view() if isinstance(o, Sold) else o
        for o in sell_many(session=session, orders=orders, now=now)
    ]


def sell_many(*, session: Session, orders: Sequence[Order], now: datetime) -> list[Sale]:
    """:func:`buy_many`, a new play given as :class:`Sold` (its view not built yet)."""
    outcomes: list[Sale | None] = [None] * len(orders)
    first: list[tuple[int, Order, str]] = []
    later: list[int] = []
    buyers: set[int] = set()
    for index, order in enumerate(orders):
        try:
            key = _check(order)
        except ServiceError as exc:
            outcomes[index] = exc
            continue
        if order.player_id in buyers:
            later.append(index)
        else:
            buyers.add(order.player_id)
            first.append((index, order, key))
    sold: list[tuple[_Sale, int]] = []  # (sale, play id)
    unsold = _Unsold()
    if first:
        sell = _sell_in_postgres if session.get_bind().dialect.name == "postgresql" else _sell_here
        try:
            sold = sell(session, first, unsold, now)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        for index, error in unsold.refused.items():
            outcomes[index] = error
    for sale, play_id in sold:
        outcomes[sale.index] = Sold(play_id, sale.cells, _play_fields(sale, now))
    for index, player_id, play_id in unsold.replays:
        try:
            outcomes[index] = view_play(
                connection=session.connection(), player_id=player_id, play_id=play_id
            )
        except ServiceError as exc:
            outcomes[index] = exc
    if unsold.replays:
        session.rollback()  # read after the commit: nothing to keep
    if later:
        again = sell_many(session=session, orders=[orders[i] for i in later], now=now)
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
    if order.mode not in tuple(Mode):
        modes = " or ".join(repr(m.value) for m in Mode)
        raise InvalidError(f"mode must be {modes}, got {order.mode!r}")
    return key


def _sell_here(
    session: Session, first: list[tuple[int, Order, str]], unsold: _Unsold, now: datetime
) -> list[tuple[_Sale, int]]:
    """Sell ``first`` (one order per player) in the session's transaction, step by step: the
    path SQLite runs; the sales and their play ids. The others go to ``unsold``."""
    wanted = _claim(session, first, unsold, now)
    sales = _sell(session, wanted, unsold.refused, now)
    return list(zip(sales, _record(session, sales, now), strict=True))


# The same steps as _sell_here, in one call of the database function (migration 0002).
_SELL_IN_POSTGRES = text(
    "SELECT * FROM pharaon_sell(CAST(:players AS integer[]), CAST(:stakes AS integer[]), "
    "CAST(:modes AS text[]), CAST(:revealed AS smallint[]), CAST(:keys AS text[]), "
    "CAST(:digests AS text[]), :now, :sales_account, :prizes_account)"
)


def _sell_in_postgres(
    session: Session, first: list[tuple[int, Order, str]], unsold: _Unsold, now: datetime
) -> list[tuple[_Sale, int]]:
    """:func:`_sell_here` on PostgreSQL, in one round trip: the function ``pharaon_sell``
    takes the same locks in the same order and writes the same rows."""
    orders = [order for _, order, _ in first]
    rows = session.connection().execute(
        _SELL_IN_POSTGRES,
        {
            "players": [o.player_id for o in orders],
            "stakes": [o.stake_cents for o in orders],
            "modes": [o.mode for o in orders],
            "revealed": [_revealed(o.mode) for o in orders],
            "keys": [key for _, _, key in first],
            "digests": [_digest(o) for o in orders],
            "now": now,
            "sales_account": SALES_ACCOUNT,
            "prizes_account": PRIZES_ACCOUNT,
        },
    )
    sold = []
    for (index, order, _), row in zip(first, rows, strict=True):
        if row.outcome == "sold":
            sale = _Sale(
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
            unsold.refused[index] = _not_debited(order, row.excluded_until, now)
        elif row.outcome == "sold_out":
            unsold.refused[index] = _sold_out(order)
        elif row.outcome == "loss_limit":
            unsold.refused[index] = _over_loss(session, order, now)
        else:
            raise RuntimeError(f"pharaon_sell answered an unknown outcome {row.outcome!r}")
    return sold


def _digest(order: Order) -> str:
    return idempotency.request_digest(
        "play", {"stake_cents": order.stake_cents, "mode": order.mode}
    )


def _revealed(mode: Mode) -> int:
    """The grids uncovered when the play is recorded: all of them in ``auto``."""
    return ALL_GRIDS if mode == Mode.AUTO else 0


def _not_debited(order: Order, excluded_until: datetime | None, now: datetime) -> ServiceError:
    """Why the stake of ``order`` was not debited: the player is self-excluded, or else the
    balance is short."""
    try:
        limits.check_not_excluded(excluded_until, now)
    except ServiceError as exc:
        return exc
    return InsufficientFundsError(
        f"the balance is less than the stake of {order.stake_cents} cents"
    )


def _over_loss(session: Session, order: Order, now: datetime) -> ServiceError:
    """The refusal of an order ``pharaon_sell`` found over the loss limit, with its figures
    read again (a refusal is rare: the sale itself does not return them)."""
    limit, loss = limits.losses(session.connection(), [order.player_id], now)[order.player_id]
    return limits.loss_refusal(limit, loss, order.stake_cents)


def _sold_out(order: Order) -> ServiceError:
    return SoldOutError(f"no unit is left on sale at {order.stake_cents} cents")


def _claim(
    session: Session, first: list[tuple[int, Order, str]], unsold: _Unsold, now: datetime
) -> list[_Wanted]:
    """Take each order's idempotency key; the orders to sell. A key used before is a replay
    of its play, or a conflict."""
    claims = idempotency.claim_many(
        session,
        requests=[(order.player_id, key, _digest(order)) for _, order, key in first],
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


def _sell(
    session: Session, wanted: list[_Wanted], refused: dict[int, ServiceError], now: datetime
) -> list[_Sale]:
    """Debit the stakes, take the units and credit their lots; the sales, in batch order.
    The refused orders' keys are given back and their stakes refunded."""
    if not wanted:
        return []
    connection = session.connection()
    players = sorted(w.order.player_id for w in wanted)
    if len(players) > 1:
        # The buyers' accounts first, in id order, before any block.
        connection.execute(_LOCK_ACCOUNTS, {"players": players})
    over = limits.over_loss_limit(
        connection, {w.order.player_id: w.order.stake_cents for w in wanted}, now
    )
    for w in wanted:
        if w.order.player_id in over:
            refused[w.index] = over[w.order.player_id]
    debited = _debit(connection, [w for w in wanted if w.index not in refused], refused, now)
    taken = _take_units(session, connection, [w for w in wanted if w.index in debited])
    sold_out = [w for w in wanted if w.index in debited and w.index not in taken]
    for w in sold_out:
        refused[w.index] = _sold_out(w.order)
    ledger.move(session, amounts={debited[w.index][0]: w.order.stake_cents for w in sold_out})
    idempotency.release_many(session, key_ids=[w.key_id for w in wanted if w.index in refused])
    units: dict[tuple[int, int], tuple[int, bytes]] = {}
    for block_id, first, last in _ranges(taken.values()):
        for serial, lot, cells in connection.execute(
            _UNITS, {"block": block_id, "first": first, "last": last}
        ):
            units[(block_id, int(serial))] = (int(lot), bytes(cells))
    sold = [w for w in wanted if w.index in taken]
    lots = {w.index: units[taken[w.index]][0] for w in sold}
    # A jouer play's lot waits in the pending account until its fourth grid (plays.reveal_many):
    # credited now, it would show in the balance, or let a purchase spend it, before its time.
    ledger.move(
        session,
        amounts={debited[w.index][0]: lots[w.index] for w in sold if w.order.mode == "auto"},
    )
    sales = []
    for w in sold:
        account_id, after_stake = debited[w.index]
        block_id, serial = taken[w.index]
        lot, cells = units[(block_id, serial)]
        sales.append(
            _Sale(
                index=w.index,
                order=w.order,
                key_id=w.key_id,
                account_id=account_id,
                balance_before=after_stake + w.order.stake_cents,
                balance_after=after_stake + lot,
                block_id=block_id,
                serial=serial,
                lot_cents=lot,
                cells=cells,
            )
        )
    return sales


def _debit(
    connection: Connection,
    wanted: list[_Wanted],
    refused: dict[int, ServiceError],
    now: datetime,
) -> dict[int, tuple[int, int]]:
    """Debit each order's stake if the balance holds it and the player is not self-excluded;
    (account id, balance after the stake) by order index. The others are refused."""
    after: dict[int, tuple[int, int]] = {}
    for stake in sorted({w.order.stake_cents for w in wanted}):  # one statement per price
        players = [w.order.player_id for w in wanted if w.order.stake_cents == stake]
        for player_id, account_id, balance in connection.execute(
            _DEBIT, {"players": players, "stake": stake, "now": now}
        ):
            after[int(player_id or 0)] = (int(account_id), int(balance))
    short = [w for w in wanted if w.order.player_id not in after]
    if short:
        until = {
            int(player_id): excluded_until
            for player_id, excluded_until in connection.execute(
                _EXCLUDED_UNTIL, {"players": [w.order.player_id for w in short]}
            )
        }
        for w in short:
            refused[w.index] = _not_debited(w.order, until[w.order.player_id], now)
    return {w.index: after[w.order.player_id] for w in wanted if w.order.player_id in after}


def _take_units(
    session: Session, connection: Connection, debited: list[_Wanted]
) -> dict[int, tuple[int, int]]:
    """The next unsold units of the open blocks, one per order, in order; (block id,
    serial) by order index. An order missing from the answer found its price sold out."""
    taken: dict[int, tuple[int, int]] = {}
    for price in sorted({w.order.stake_cents for w in debited}):  # blocks in price order
        needed = [w for w in debited if w.order.stake_cents == price]
        tried_to_open = False
        while needed:
            row = connection.execute(_OPEN_BLOCK, {"price": price}).first()
            if row is None:
                if tried_to_open:
                    break
                # Sold out: open the next block. If a concurrent buyer opened it first,
                # open_next waited for its commit, so the next look finds it either way.
                blocks.open_next(session, price_cents=price)
                tried_to_open = True
                continue
            tried_to_open = False
            block_id, next_serial, size = int(row[0]), int(row[1]), int(row[2])
            count = max(0, min(len(needed), size + 1 - next_serial))
            end = next_serial + count
            connection.execute(
                _ADVANCE,
                {"block": block_id, "next": end, "new_state": "sold_out" if end > size else "open"},
            )
            for w, serial in zip(needed[:count], range(next_serial, end), strict=True):
                taken[w.index] = (block_id, serial)
            needed = needed[count:]
    return taken


def _ranges(units: Iterable[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(block id, first serial, last serial) covering ``units`` (block id, serial)."""
    spans: dict[int, tuple[int, int]] = {}
    for block_id, serial in units:
        low, high = spans.get(block_id, (serial, serial))
        spans[block_id] = (min(low, serial), max(high, serial))
    return [(block_id, low, high) for block_id, (low, high) in sorted(spans.items())]


def _play_fields(sale: _Sale, now: datetime) -> dict[str, Any]:
    return {
        "created_at": now,
        "stake_cents": sale.order.stake_cents,
        "mode": sale.order.mode,
        "serial": sale.serial,
        "block_id": sale.block_id,
        "revealed": _revealed(sale.order.mode),
        "prize_cents": sale.lot_cents,
        "balance_before_cents": sale.balance_before,
        "balance_after_cents": sale.balance_after,
    }


def _record(session: Session, sales: list[_Sale], now: datetime) -> list[int]:
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
                (s.account_id if s.order.mode == "auto" else PENDING_ACCOUNT, s.lot_cents),
            ]
            for s in sales
        ],
        now=now,
        settled=frozenset(s.account_id for s in sales),
    )
    play_ids = [
        int(row[0])
        for row in session.connection().execute(
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
