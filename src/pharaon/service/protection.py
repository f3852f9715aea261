"""The player's protection beyond deposit limits: a cool-off of 24 hours to 7 days and a
password change; each is an audit record. The caller commits."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from pharaon.service import accounts, audit, limits
from pharaon.service.errors import ForbiddenError, InvalidError
from pharaon.store.tables import Player, SessionRow

COOL_OFF_HOURS = (24, 7 * 24)


def _actor(player_id: int) -> str:
    return f"player:{player_id}"


def cool_off(*, session: Session, player_id: int, hours: int, now: datetime) -> datetime:
    """No play nor deposit for ``hours`` (24..168); never shortens a pause already in force."""
    low, high = COOL_OFF_HOURS
    if not low <= hours <= high:
        raise InvalidError(f"a cool-off lasts {low} to {high} hours, got {hours}")
    until = limits.exclude_until(
        session=session, player_id=player_id, until=now + timedelta(hours=hours)
    )
    audit.append(
        session,
        kind="cool_off",
        actor=_actor(player_id),
        payload={"player_id": player_id, "hours": hours, "until": until.isoformat()},
        now=now,
    )
    return until


def change_password(
    *,
    session: Session,
    player_id: int,
    current_password: str,
    new_password: str,
    keep_session_sha256: str,
    now: datetime,
) -> None:
    """Replace the password after checking the current one; the player's other sessions end."""
    stored = session.execute(
        select(Player.password_hash).where(Player.id == player_id)
    ).scalar_one()
    if not accounts._verify(stored, current_password):
        raise ForbiddenError("the current password is wrong")
    if not accounts.PASSWORD_MIN <= len(new_password) <= accounts.PASSWORD_MAX:
        raise InvalidError(
            f"password must be {accounts.PASSWORD_MIN} to {accounts.PASSWORD_MAX} characters, "
            f"got {len(new_password)}"
        )
    session.execute(
        update(Player)
        .where(Player.id == player_id)
        .values(password_hash=accounts._hash(new_password))
    )
    session.execute(
        delete(SessionRow).where(
            SessionRow.player_id == player_id, SessionRow.token_sha256 != keep_session_sha256
        )
    )
    audit.append(
        session,
        kind="password_changed",
        actor=_actor(player_id),
        payload={"player_id": player_id},
        now=now,
    )


def close_account(*, session: Session, player_id: int, password: str, now: datetime) -> None:
    """Close the account after checking the password: no more log-in, every session ends; the
    balance stays on the ledger."""
    stored = session.execute(
        select(Player.password_hash).where(Player.id == player_id)
    ).scalar_one()
    if not accounts._verify(stored, password):
        raise ForbiddenError("the password is wrong")
    session.execute(update(Player).where(Player.id == player_id).values(closed_at=now))
    session.execute(delete(SessionRow).where(SessionRow.player_id == player_id))
    audit.append(
        session,
        kind="account_closed",
        actor=_actor(player_id),
        payload={"player_id": player_id},
        now=now,
    )
