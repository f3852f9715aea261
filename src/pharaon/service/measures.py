"""What an operator does to a player's account, each with a reason the player reads on their
page and the operator's name in the audit log: a note; a suspension (play and deposits stopped
until lifted) or an exclusion for a number of days (the same, with an end); lifting either;
closing the account (no more log-in, every session ends; the balance stays on the ledger).

Each measure is one conditional statement on the player's row, so two operators acting at
once cannot both lift one suspension, nor both close one account."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Update, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import audit, sessions
from pharaon.service.errors import (
    AccountClosedError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ServiceError,
    SuspendedError,
)
from pharaon.store.tables import MEASURES, Operator, Player, PlayerNote

EXCLUSION_DAYS = (1, 3 * 365)
REASON_MAX = 500
_SHOWN = 50


@dataclass(frozen=True, slots=True)
class Note:
    """A measure or a note, as the player's page and the back office show it; ``operator``
    (an e-mail) only in the back office."""

    note_id: int
    measure: str
    reason: str
    until: datetime | None
    created_at: datetime
    operator: str | None = None


def take(
    *,
    session: Session,
    player_id: int,
    operator_id: int,
    actor: str,
    measure: str,
    reason: str,
    now: datetime,
    days: int | None = None,
) -> Note:
    """Take ``measure`` (one of :data:`MEASURES`) on ``player_id`` for ``reason``; an exclusion
    lasts ``days``. :class:`ConflictError` if the account is closed (but for a note), or there
    is nothing to lift."""
    reason = reason.strip()
    if not 1 <= len(reason) <= REASON_MAX:
        raise InvalidError(f"a reason of 1 to {REASON_MAX} characters is needed")
    if measure not in MEASURES:
        raise InvalidError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if (measure == "exclude") != (days is not None):
        raise InvalidError("days is given for an exclusion, and only for one")
    until = _until(now, days) if days is not None else None
    statement = _statement(measure, now, until).where(Player.id == player_id)
    if session.execute(statement.returning(Player.id)).first() is None:
        raise _why_not(session.connection(), player_id)
    if measure == "close":
        sessions.end_all(session=session, player_id=player_id)
    note_id = session.execute(
        insert(PlayerNote)
        .values(
            player_id=player_id,
            operator_id=operator_id,
            measure=measure,
            reason=reason,
            until=until,
            created_at=now,
        )
        .returning(PlayerNote.id)
    ).scalar_one()
    audit.append(
        session,
        kind=f"player_{measure}",
        actor=actor,
        payload={
            "player_id": player_id,
            "note_id": note_id,
            "reason": reason,
            "until": None if until is None else until.isoformat(),
        },
        now=now,
    )
    return Note(int(note_id), measure, reason, until, now)


def _until(now: datetime, days: int) -> datetime:
    low, high = EXCLUSION_DAYS
    if not low <= days <= high:
        raise InvalidError(f"an exclusion lasts {low} to {high} days, got {days}")
    return now + timedelta(days=days)


def _statement(measure: str, now: datetime, until: datetime | None) -> Update:
    """The conditional update of the player's row that takes ``measure``: no row changed means
    it cannot be taken (see :func:`_why_not`)."""
    if measure == "note":  # only that the player is there (its row locked, so ordered)
        return update(Player).values(id=Player.id)
    still_open = update(Player).where(Player.closed_at.is_(None))
    if measure == "close":
        return still_open.values(closed_at=now)
    if measure == "lift":
        return (
            still_open.where(Player.suspended_at.is_not(None))
            .where(Player.suspended_until.is_(None) | (Player.suspended_until > now))
            .values(suspended_at=None, suspended_until=None)
        )
    return still_open.values(suspended_at=now, suspended_until=until)  # suspend, exclude


def _why_not(connection: Connection, player_id: int) -> ServiceError:
    row = connection.execute(select(Player.closed_at).where(Player.id == player_id)).first()
    if row is None:
        return NotFoundError(f"no player {player_id}")
    if row.closed_at is not None:
        return ConflictError(f"the account of player {player_id} is closed")
    return ConflictError(f"player {player_id} is neither suspended nor excluded: nothing to lift")


def notes(*, connection: Connection, player_id: int, with_operator: bool = False) -> list[Note]:
    """The player's last notes and measures, newest first; with the operators' e-mails for
    the back office."""
    rows = connection.execute(
        select(
            PlayerNote.id,
            PlayerNote.measure,
            PlayerNote.reason,
            PlayerNote.until,
            PlayerNote.created_at,
            Operator.email,
        )
        .join(Operator, Operator.id == PlayerNote.operator_id)
        .where(PlayerNote.player_id == player_id)
        .order_by(PlayerNote.id.desc())
        .limit(_SHOWN)
    )
    return [
        Note(int(n_id), measure, reason, until, at, email if with_operator else None)
        for n_id, measure, reason, until, at, email in rows
    ]


def in_force(suspended_at: datetime | None, until: datetime | None, now: datetime) -> bool:
    """Whether a suspension from ``suspended_at`` to ``until`` (None: no end) holds at ``now``."""
    return suspended_at is not None and (until is None or until > now)


def suspension_refusal(
    suspended_at: datetime | None, until: datetime | None, now: datetime
) -> SuspendedError | None:
    """Why a suspended player may neither play nor deposit; None if they may."""
    if not in_force(suspended_at, until, now):
        return None
    if until is None:
        return SuspendedError("the operator suspended this account: no deposits or plays")
    return SuspendedError(
        f"the operator excluded this account until {until.isoformat(timespec='seconds')}: "
        "no deposits or plays until then",
        fields={"until": until.isoformat()},
    )


def closed_refusal(
    connection: Connection, player_id: int, closed_at: datetime
) -> AccountClosedError:
    """A log-in to an account closed at ``closed_at``, with the operator's reason if an
    operator closed it (the caller checked the password)."""
    reason = connection.execute(
        select(PlayerNote.reason)
        .where(PlayerNote.player_id == player_id, PlayerNote.measure == "close")
        .order_by(PlayerNote.id.desc())
        .limit(1)
    ).scalar()
    fields = {"closed_at": closed_at.isoformat()}
    if reason is not None:
        fields["reason"] = reason
    return AccountClosedError(
        f"this account was closed on {closed_at.date().isoformat()}", fields=fields
    )
