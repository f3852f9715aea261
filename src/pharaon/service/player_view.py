"""A player seen from the back office: found by e-mail, with plays, ledger entries, deposit
limits, the self-exclusion and an operator's suspension in force, and the operators' notes and
measures (service/measures.py takes them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, select

from pharaon.service import identity, limits, measures, withdrawals
from pharaon.service.errors import NotFoundError
from pharaon.store.tables import Account, LedgerEntry, LedgerTransaction, Player, PlayRow

_MAX_FOUND = 50


@dataclass(frozen=True, slots=True)
class PlayerLine:
    player_id: int
    email: str
    created_at: datetime
    balance_cents: int
    self_excluded_until: datetime | None
    suspended: bool
    suspended_until: datetime | None  # None: none in force, or until lifted
    closed_at: datetime | None
    verified_at: datetime | None = None  # None: the identity is not verified (provisional)
    banned: bool = False  # found on the banned-gamblers list (service/banned.py)
    # What the pause until self_excluded_until is (limits.PAUSE_KINDS); None with none.
    pause_kind: str | None = None


@dataclass(frozen=True, slots=True)
class PlayLine:
    play_id: int
    created_at: datetime
    block_id: int
    serial: int
    stake_cents: int
    prize_cents: int


@dataclass(frozen=True, slots=True)
class LedgerLine:
    transaction_id: int
    created_at: datetime
    kind: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class PlayerFile:
    player: PlayerLine
    plays: tuple[PlayLine, ...]
    ledger: tuple[LedgerLine, ...]
    limits: limits.Limits
    notes: tuple[measures.Note, ...]
    identity_check: identity.CheckSeen | None  # None: provisional
    withdrawals: tuple[withdrawals.WaitingLine, ...]


_PLAYER = select(
    Player.id,
    Player.email,
    Player.created_at,
    Account.balance_cents,
    Player.self_excluded_until,
    Player.pause_kind,
    Player.suspended_at,
    Player.suspended_until,
    Player.closed_at,
    Player.verified_at,
    Player.banned_at,
).join(Account, Account.player_id == Player.id)


def _line(row: Row[*tuple[Any, ...]], now: datetime) -> PlayerLine:
    suspended = measures.in_force(row.suspended_at, row.suspended_until, now)
    paused = limits.still_excluded(row.self_excluded_until, now)
    return PlayerLine(
        int(row.id),
        row.email,
        row.created_at,
        int(row.balance_cents),
        paused,
        suspended,
        row.suspended_until if suspended else None,
        row.closed_at,
        row.verified_at,
        row.banned_at is not None,
        row.pause_kind if paused else None,
    )


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search(*, connection: Connection, email: str, now: datetime) -> list[PlayerLine]:
    """Players whose e-mail contains ``email`` (case-insensitive), at most 50, by e-mail."""
    pattern = f"%{_escape(email.strip().lower())}%"
    rows = connection.execute(
        _PLAYER.where(Player.email.like(pattern, escape="\\"))
        .order_by(Player.email)
        .limit(_MAX_FOUND)
    )
    return [_line(r, now) for r in rows]


def player_file(
    *, connection: Connection, player_id: int, now: datetime, last: int = 100
) -> PlayerFile:
    """One player's last ``last`` plays and ledger entries, limits and exclusion in force, the
    operators' notes, the identity check and the last withdrawals."""
    row = connection.execute(_PLAYER.where(Player.id == player_id)).first()
    if row is None:
        raise NotFoundError(f"no player {player_id}")
    player = _line(row, now)
    plays = tuple(
        PlayLine(
            int(p.id), p.created_at, int(p.block_id), int(p.serial), p.stake_cents, p.prize_cents
        )
        for p in connection.execute(
            select(PlayRow)
            .where(PlayRow.player_id == player_id)
            .order_by(PlayRow.id.desc())
            .limit(last)
        )
    )
    ledger = tuple(
        LedgerLine(int(t_id), created, kind, int(amount))
        for t_id, created, kind, amount in connection.execute(
            select(
                LedgerTransaction.id,
                LedgerTransaction.created_at,
                LedgerTransaction.kind,
                LedgerEntry.amount_cents,
            )
            .join(LedgerEntry, LedgerEntry.transaction_id == LedgerTransaction.id)
            .join(Account, Account.id == LedgerEntry.account_id)
            .where(Account.player_id == player_id)
            .order_by(LedgerTransaction.id.desc())
            .limit(last)
        )
    )
    return PlayerFile(
        player,
        plays,
        ledger,
        limits.get_limits(connection=connection, player_id=player_id, now=now),
        tuple(measures.notes(connection=connection, player_id=player_id, with_operator=True)),
        identity.check_of(connection=connection, player_id=player_id),
        tuple(withdrawals.lines_of_player(connection=connection, player_id=player_id)),
    )
