"""A purchase: debit the stake, take the next unsold unit of the open block at that price,
record the play and credit the unit's lot, in one atomic transaction.

The unit is taken with one ``UPDATE blocks SET next_serial = next_serial + 1 ... RETURNING``:
the block's row lock (PostgreSQL) or the database write lock (SQLite, ``BEGIN IMMEDIATE``)
orders buyers, so serials are sold in order, none twice and none skipped. Rows are locked in
the same order by every writer (the player's account, the block, operator accounts by id, the
audit head), so concurrent purchases never deadlock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import case, insert, select, update
from sqlalchemy.orm import Session

from pharaon.game.rules import rules
from pharaon.service import blocks, idempotency, ledger, limits
from pharaon.service.errors import InsufficientFundsError, InvalidError, SoldOutError
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
ALL_GRIDS = 0b1111


def _take_unit(session: Session, price_cents: int) -> tuple[int, int] | None:
    """(block id, serial) of the next unit on sale at ``price_cents``, now sold; or None."""
    row = session.execute(
        update(Block)
        .where(Block.price_cents == price_cents, Block.state == "open")
        .values(
            next_serial=Block.next_serial + 1,
            state=case((Block.next_serial == Block.block_size, "sold_out"), else_=Block.state),
        )
        .returning(Block.id, Block.next_serial)
    ).first()
    return None if row is None else (int(row[0]), int(row[1]) - 1)


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
    key = idempotency.check_key(idempotency_key)
    try:
        rules().multiplier(stake_cents)
    except ValueError as exc:
        raise InvalidError(str(exc)) from exc
    if mode not in ("jouer", "auto"):
        raise InvalidError(f"mode must be 'jouer' or 'auto', got {mode!r}")
    try:
        claim = idempotency.claim(
            session,
            player_id=player_id,
            key=key,
            digest=idempotency.request_digest("play", {"stake_cents": stake_cents, "mode": mode}),
            now=now,
        )
        if claim.replay_of is not None:
            session.rollback()
            return view_play(session=session, player_id=player_id, play_id=claim.replay_of)
        excluded = session.execute(
            select(Player.self_excluded_until).where(Player.id == player_id)
        ).scalar_one()
        limits.check_not_excluded(excluded, now)
        debited = session.execute(
            update(Account)
            .where(Account.player_id == player_id, Account.balance_cents >= stake_cents)
            .values(balance_cents=Account.balance_cents - stake_cents)
            .returning(Account.id, Account.balance_cents)
        ).first()
        if debited is None:
            raise InsufficientFundsError(
                f"the balance is less than the stake of {stake_cents} cents"
            )
        account_id, after_stake = int(debited[0]), int(debited[1])
        taken = _take_unit(session, stake_cents)
        if taken is None:
            # Sold out: open the next block. If a concurrent buyer opened it first, open_next
            # waited for its commit, so the second try sees the block on sale either way.
            blocks.open_next(session, price_cents=stake_cents)
            taken = _take_unit(session, stake_cents)
        if taken is None:
            raise SoldOutError(f"no unit is left on sale at {stake_cents} cents")
        block_id, serial = taken
        unit = session.execute(
            select(UnitRow.lot_cents, UnitRow.cells).where(
                UnitRow.block_id == block_id, UnitRow.serial == serial
            )
        ).one()
        lot = int(unit.lot_cents)
        after = after_stake
        if lot:
            after = int(
                session.execute(
                    update(Account)
                    .where(Account.id == account_id)
                    .values(balance_cents=Account.balance_cents + lot)
                    .returning(Account.balance_cents)
                ).scalar_one()
            )
        transaction_id = ledger.post(
            session,
            kind="purchase",
            entries=[
                (account_id, -stake_cents),
                (SALES_ACCOUNT, stake_cents),
                (PRIZES_ACCOUNT, -lot),
                (account_id, lot),
            ],
            now=now,
            settled=frozenset({account_id}),
        )
        play: dict[str, Any] = {
            "created_at": now,
            "stake_cents": stake_cents,
            "mode": mode,
            "serial": serial,
            "block_id": block_id,
            "revealed": ALL_GRIDS if mode == "auto" else 0,
            "prize_cents": lot,
            "balance_before_cents": after_stake + stake_cents,
            "balance_after_cents": after,
        }
        play_id = int(
            session.execute(
                insert(PlayRow)
                .values(player_id=player_id, transaction_id=transaction_id, **play)
                .returning(PlayRow.id)
            ).scalar_one()
        )
        idempotency.settle_and_record(
            session,
            claim=claim,
            result_id=play_id,
            kind="purchase",
            player_id=player_id,
            payload={
                "play_id": play_id,
                "player_id": player_id,
                "block_id": block_id,
                "serial": serial,
                "stake_cents": stake_cents,
                "lot_cents": lot,
                "transaction_id": transaction_id,
            },
            now=now,
        )
    except BaseException:
        session.rollback()
        raise
    return build_view(play_id=play_id, cells=unit.cells, **play)
