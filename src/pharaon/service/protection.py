"""The player's protection beyond deposit and loss limits: a cool-off of 24 hours to 7 days,
the reality check (its interval, and the session's figures it shows), a password change and
the account's closure; each change is an audit record. The caller checks the password asked
(:mod:`pharaon.service.passwords`) before the transaction, and commits it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, select, update
from sqlalchemy.orm import Session

from pharaon.service import audit, limits, sessions, traces
from pharaon.service.errors import ConflictError, InvalidError, UnauthorizedError
from pharaon.store.tables import Player, PlayRow, SessionRow

COOL_OFF_HOURS = (24, 7 * 24)
# The intervals a player may choose between two reality checks, in minutes (None: off).
REALITY_CHECK_MINUTES = (15, 30, 60, 120)


def cool_off(
    *,
    session: Session,
    player_id: int,
    hours: int,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> datetime:
    """No play nor deposit for ``hours`` (24..168); never shortens a pause already in force."""
    low, high = COOL_OFF_HOURS
    if not low <= hours <= high:
        raise InvalidError(f"a cool-off lasts {low} to {high} hours, got {hours}")
    until = limits.exclude_until(
        session=session,
        player_id=player_id,
        until=now + timedelta(hours=hours),
        kind=limits.COOL_OFF,
    )
    audit.append(
        session,
        kind="cool_off",
        actor=audit.player_actor(player_id),
        payload={
            "player_id": player_id,
            "hours": hours,
            "until": until.isoformat(),
            **seen.fields(),
        },
        now=now,
    )
    return until


def change_password(
    *,
    session: Session,
    player_id: int,
    checked_hash: str,
    new_hash: str,
    keep_session_sha256: str,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> None:
    """Replace the password, whose hash was ``checked_hash`` when the caller checked the current
    password against it, by ``new_hash``; the player's other sessions end. Compared and set in
    one statement: of concurrent changes from one password, one wins and the others get
    :class:`ConflictError`."""
    _compare_and_set(session, player_id, checked_hash, password_hash=new_hash)
    sessions.end_all(session=session, player_id=player_id, but=keep_session_sha256)
    audit.append(
        session,
        kind="password_changed",
        actor=audit.player_actor(player_id),
        payload={"player_id": player_id, **seen.fields()},
        now=now,
    )


def close_account(
    *,
    session: Session,
    player_id: int,
    checked_hash: str,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> None:
    """Close the account, once the caller checked its password against ``checked_hash`` (still
    its hash: else :class:`ConflictError`): no more log-in, every session ends; the balance
    stays on the ledger."""
    _compare_and_set(session, player_id, checked_hash, closed_at=now)
    sessions.end_all(session=session, player_id=player_id)
    audit.append(
        session,
        kind="account_closed",
        actor=audit.player_actor(player_id),
        payload={"player_id": player_id, **seen.fields()},
        now=now,
    )


def _compare_and_set(session: Session, player_id: int, checked_hash: str, **values: object) -> None:
    changed = session.execute(
        update(Player)
        .where(
            Player.id == player_id,
            Player.password_hash == checked_hash,
            Player.closed_at.is_(None),
        )
        .values(**values)
        .returning(Player.id)
    ).first()
    if changed is None:
        raise ConflictError("the password or the account changed meanwhile; try again")


def set_reality_check(
    *,
    session: Session,
    player_id: int,
    minutes: int | None,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> int | None:
    """Show the reality check every ``minutes`` of a session (one of
    :data:`REALITY_CHECK_MINUTES`), or never (None); it applies at once either way."""
    if minutes is not None and minutes not in REALITY_CHECK_MINUTES:
        allowed = ", ".join(str(m) for m in REALITY_CHECK_MINUTES)
        raise InvalidError(f"minutes must be null or one of {allowed}, got {minutes}")
    session.execute(
        update(Player).where(Player.id == player_id).values(reality_check_minutes=minutes)
    )
    audit.append(
        session,
        kind="reality_check",
        actor=audit.player_actor(player_id),
        payload={"player_id": player_id, "minutes": minutes, **seen.fields()},
        now=now,
    )
    return minutes


@dataclass(frozen=True, slots=True)
class SessionFigures:
    """What the reality check shows of a log-in session: since ``started_at``, the stakes of
    the plays bought and their lots credited so far (a jouer lot at its fourth grid)."""

    started_at: datetime
    elapsed_seconds: int
    stakes_cents: int
    wins_cents: int
    reality_check_minutes: int | None

    @property
    def net_cents(self) -> int:
        """Wins minus stakes: negative when the session has cost the player."""
        return self.wins_cents - self.stakes_cents


def session_figures(
    *, connection: Connection, player_id: int, token_sha256: str, now: datetime
) -> SessionFigures:
    """The figures of the session ``token_sha256`` of ``player_id`` at ``now``; the plays are
    read by ``ix_plays_player_time``."""
    row = connection.execute(
        select(SessionRow.created_at, Player.reality_check_minutes)
        .join(Player, Player.id == SessionRow.player_id)
        .where(SessionRow.token_sha256 == token_sha256, SessionRow.player_id == player_id)
    ).first()
    if row is None:
        raise UnauthorizedError("not logged in, or the session has ended")
    started: datetime = row.created_at
    stakes, wins = connection.execute(
        select(
            func.coalesce(func.sum(PlayRow.stake_cents), 0),
            func.coalesce(func.sum(limits.CREDITED_LOT), 0),
        ).where(PlayRow.player_id == player_id, PlayRow.created_at >= started)
    ).one()
    return SessionFigures(
        started_at=started,
        elapsed_seconds=max(0, int((now - started).total_seconds())),
        stakes_cents=int(stakes),
        wins_cents=int(wins),
        reality_check_minutes=row.reality_check_minutes,
    )
