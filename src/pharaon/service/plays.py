"""Plays as the player sees them: uncovered grid by grid (``jouer``) or all at once
(``auto``), with the progress stored, and the history. Nothing of a unit shows before its grid
is uncovered; an unsold unit never shows at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select, update
from sqlalchemy.orm import Session

from pharaon.game.board import BONUS_CELLS, GRIDS
from pharaon.game.evaluate import evaluate
from pharaon.game.modes import Mode
from pharaon.game.rules import rules
from pharaon.game.unit import Unit
from pharaon.service import audit, ledger
from pharaon.service.errors import InvalidError, NotFoundError, ServiceError
from pharaon.store.tables import (
    PENDING_ACCOUNT,
    UNFINISHED_JOUER,
    Account,
    PlayRow,
    UnitRow,
)

MAX_PAGE = 100
ALL_GRIDS = (1 << GRIDS) - 1  # revealed: every grid uncovered


@dataclass(frozen=True, slots=True)
class PlayView:
    """A play, showing only what has been uncovered (docs/api.md, ``Play``)."""

    play_id: int
    created_at: datetime
    stake_cents: int
    mode: Mode
    serial: int
    block_id: int
    grids: tuple[str | None, ...]  # 4 × 16 codes, None until uncovered
    finished: bool
    bonus: str | None
    combinations: tuple[dict[str, Any], ...] | None
    prize_cents: int | None
    ticket: str | None
    balance_before_cents: int
    balance_after_cents: int | None
    # The player left it unfinished: the server uncovered it (:func:`finish_left`).
    finished_by_server: bool = False


def _columns() -> tuple[Any, ...]:
    return (
        PlayRow.id.label("play_id"),
        PlayRow.created_at,
        PlayRow.stake_cents,
        PlayRow.mode,
        PlayRow.serial,
        PlayRow.block_id,
        PlayRow.revealed,
        PlayRow.prize_cents,
        PlayRow.balance_before_cents,
        PlayRow.balance_after_cents,
        PlayRow.finished_by_server_at,
        UnitRow.cells,
    )


def _query() -> Any:
    return select(*_columns()).join(
        UnitRow, (UnitRow.block_id == PlayRow.block_id) & (UnitRow.serial == PlayRow.serial)
    )


def _view(row: Row[Any]) -> PlayView:
    return build_view(**row._mapping)


def build_view(
    *,
    play_id: int,
    created_at: datetime,
    stake_cents: int,
    mode: str,
    serial: int,
    block_id: int,
    revealed: int,
    prize_cents: int,
    balance_before_cents: int,
    balance_after_cents: int,
    cells: bytes,
    finished_by_server_at: datetime | None = None,
) -> PlayView:
    """What the player may see of a play whose grids ``revealed`` (bit g-1: grid g) are
    uncovered; ``cells``: the unit's 64 symbol indices as bytes."""
    unit = Unit(tuple(cells))  # the bytes are the symbol indices
    finished = revealed == ALL_GRIDS
    grids = tuple(unit.grid_codes(g) if revealed & (1 << g) else None for g in range(GRIDS))
    bonus = combinations = prize = ticket = after = None
    if finished:
        codes = rules().symbol_codes
        bonus = "".join(codes[unit.cells[i]] for i in BONUS_CELLS)
        combinations = tuple(c.as_json() for c in evaluate(unit, stake_cents).combinations)
        prize, ticket, after = prize_cents, unit.ticket, balance_after_cents
    return PlayView(
        play_id=play_id,
        created_at=created_at,
        stake_cents=stake_cents,
        mode=Mode(mode),
        serial=serial,
        block_id=block_id,
        grids=grids,
        finished=finished,
        bonus=bonus,
        combinations=combinations,
        prize_cents=prize,
        ticket=ticket,
        balance_before_cents=balance_before_cents,
        balance_after_cents=after,
        finished_by_server=finished_by_server_at is not None,
    )


# Built once: the page asks for them at every grid.
_ONE_PLAY = _query().where(
    PlayRow.id == bindparam("play"), PlayRow.player_id == bindparam("player")
)
# Changes the row only if one of the grids was covered, so a play is finished by one reveal
# only.
_UNCOVER = (
    update(PlayRow)
    .where(
        PlayRow.id == bindparam("play"),
        PlayRow.player_id == bindparam("player"),
        PlayRow.revealed.op("&")(bindparam("grid_bits")) != bindparam("grid_bits"),
    )
    .values(revealed=PlayRow.revealed.op("|")(bindparam("grid_bits")))
    .returning(PlayRow.revealed, PlayRow.prize_cents)
)
# The plays' units' cells, with the plays' players (checked against the askers').
_GRIDS = (
    select(PlayRow.id, PlayRow.player_id, UnitRow.cells)
    .join(UnitRow, (UnitRow.block_id == PlayRow.block_id) & (UnitRow.serial == PlayRow.serial))
    .where(PlayRow.id.in_(bindparam("plays", expanding=True)))
)
_ACCOUNTS = select(Account.player_id, Account.id).where(
    Account.player_id.in_(bindparam("players", expanding=True))
)


@dataclass(frozen=True, slots=True)
class Reveal:
    """A player's request to uncover grid ``grid`` (1..4) of play ``play_id``, and with it the
    grids ``also`` (the page's last grid: every grid it showed, so the play ends in one
    write)."""

    player_id: int
    play_id: int
    grid: int
    also: tuple[int, ...] = ()

    @property
    def grids(self) -> tuple[int, ...]:
        return (self.grid, *self.also)


@dataclass(frozen=True, slots=True)
class GridAsked:
    """A player's request to see grid ``grid`` (1..4) of play ``play_id``."""

    player_id: int
    play_id: int
    grid: int


def grid_codes(
    *, connection: Connection, requests: Sequence[GridAsked], now: datetime
) -> list[str | ServiceError]:
    """For each of ``requests``, its grid's 16 codes, row by row, in one statement for all
    that writes nothing: showing a grid changes nothing the purchase did not fix (the play's
    lot moves when it ends, :func:`reveal`), so the page shows grids 1 to 3 with reads and ends
    the play with one write. Or what refused it: :class:`InvalidError` for a grid outside 1..4,
    :class:`NotFoundError` for a play that is not the player's."""
    del now  # a grid is the same at any time
    cells = {
        (int(player), int(play)): bytes(found)
        for play, player, found in connection.execute(
            _GRIDS, {"plays": sorted({r.play_id for r in requests})}
        )
    }
    answers: list[str | ServiceError] = []
    for r in requests:
        found = cells.get((r.player_id, r.play_id))
        if (wrong := _no_grid((r.grid,))) is not None:
            answers.append(wrong)
        elif found is None:
            answers.append(NotFoundError(f"no play {r.play_id} of yours"))
        else:
            answers.append(Unit(tuple(found)).grid_codes(r.grid - 1))
    return answers


def _no_grid(grids: Sequence[int]) -> InvalidError | None:
    """The refusal of the first of ``grids`` outside 1..4; None if all are grids."""
    wrong = [g for g in grids if not 1 <= g <= GRIDS]
    return InvalidError(f"grid must be 1..{GRIDS}, got {wrong[0]}") if wrong else None


def view_play(*, connection: Connection, player_id: int, play_id: int) -> PlayView:
    """The player's play ``play_id``, in one statement; :class:`NotFoundError` for anyone
    else's."""
    row = connection.execute(_ONE_PLAY, {"play": play_id, "player": player_id}).first()
    if row is None:
        raise NotFoundError(f"no play {play_id} of yours")
    return _view(row)


def reveal(
    *, session: Session, requests: Sequence[Reveal], now: datetime
) -> list[PlayView | ServiceError]:
    """Uncover the grids of each of ``requests`` in the caller's transaction (the caller's one
    commit serves the batch); for each, its play as far as uncovered, or what refused it:
    :class:`InvalidError` for a grid outside 1..4, :class:`NotFoundError` for a play that is not
    the player's. Uncovering a grid again changes nothing. The plays are locked in id order, as
    every batch locks them, until the caller commits.

    The grid that finishes a jouer play moves its lot from the pending account to the player's,
    in this transaction (one ledger transaction and one audit record per winning play): the
    lot shows in the balance, and can be spent, from then on and not before.
    """
    outcomes: dict[int, PlayView | ServiceError] = {}
    connection = session.connection()
    finished: list[tuple[int, int, int]] = []  # (player id, play id, lot), lot > 0
    for index in sorted(range(len(requests)), key=lambda i: requests[i].play_id):
        r = requests[index]
        if (wrong := _no_grid(r.grids)) is not None:
            outcomes[index] = wrong
            continue
        bits = sum({1 << (g - 1) for g in r.grids})
        params = {"play": r.play_id, "player": r.player_id, "grid_bits": bits}
        changed = connection.execute(_UNCOVER, params).first()
        if changed is not None and changed.revealed == ALL_GRIDS and changed.prize_cents:
            finished.append((r.player_id, r.play_id, int(changed.prize_cents)))
        try:
            outcomes[index] = view_play(
                connection=connection, player_id=r.player_id, play_id=r.play_id
            )
        except NotFoundError as exc:
            outcomes[index] = exc
    _credit_lots(session, finished, now)
    return [outcomes[i] for i in range(len(requests))]


def finish_left(*, session: Session, now: datetime, after: timedelta, most: int = 1_000) -> int:
    """Finish the jouer plays bought ``after`` or longer before ``now`` and still not fully
    uncovered (at most ``most``, oldest first): every grid uncovered, the lot credited from the
    pending account, the play marked finished by the server, an audit record each. Several
    servers may run it at once: a play is finished by one of them (the update's condition is
    checked again on the locked row). The number of plays finished."""
    stale = (
        select(PlayRow.id)
        .where(UNFINISHED_JOUER, PlayRow.created_at <= now - after)
        .order_by(PlayRow.id)
        .limit(most)
    )
    done = session.execute(
        update(PlayRow)
        .where(PlayRow.id.in_(stale.scalar_subquery()), UNFINISHED_JOUER)
        .values(revealed=ALL_GRIDS, finished_by_server_at=now)
        .returning(PlayRow.player_id, PlayRow.id, PlayRow.prize_cents)
    ).all()
    finished = sorted((int(p), int(play), int(lot)) for p, play, lot in done)
    if not finished:
        return 0
    _credit_lots(session, [f for f in finished if f[2] > 0], now)
    audit.append_many(
        session,
        records=[
            (
                "play_finished_by_server",
                audit.SERVER_ACTOR,
                {"play_id": play, "player_id": p, "lot_cents": lot},
            )
            for p, play, lot in finished
        ],
        now=now,
    )
    return len(finished)


def _credit_lots(session: Session, finished: list[tuple[int, int, int]], now: datetime) -> None:
    """Move the lots of the jouer plays just finished, (player id, play id, lot), from the
    pending account to their players'; the players' accounts first, then the pending account
    and the audit head, the order every writer locks them in."""
    if not finished:
        return
    connection = session.connection()
    account = {
        int(player or 0): int(acc)
        for player, acc in connection.execute(
            _ACCOUNTS, {"players": sorted({p for p, _, _ in finished})}
        )
    }
    credits: dict[int, int] = {}
    for player_id, _, lot in finished:
        credits[account[player_id]] = credits.get(account[player_id], 0) + lot
    ledger.move(session, amounts=credits)
    transaction_ids = ledger.post_many(
        session,
        kind="prize",
        movements=[[(PENDING_ACCOUNT, -lot), (account[p], lot)] for p, _, lot in finished],
        now=now,
        settled=frozenset(credits),
    )
    audit.append_many(
        session,
        records=[
            (
                "prize",
                audit.player_actor(p),
                {"play_id": play, "player_id": p, "lot_cents": lot, "transaction_id": t},
            )
            for (p, play, lot), t in zip(finished, transaction_ids, strict=True)
        ],
        now=now,
    )


def history(
    *, connection: Connection, player_id: int, limit: int, before: int | None
) -> tuple[list[PlayView], int | None]:
    """The player's plays newest first, ``limit`` (1..100) of them with ids below ``before``,
    in one statement; and the ``before`` of the next page (None on the last)."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidError(f"limit must be 1..{MAX_PAGE}, got {limit}")
    query = _query().where(PlayRow.player_id == player_id)
    if before is not None:
        query = query.where(PlayRow.id < before)
    rows = connection.execute(query.order_by(PlayRow.id.desc()).limit(limit + 1)).all()
    views = [_view(r) for r in rows[:limit]]
    return views, (views[-1].play_id if len(rows) > limit else None)
