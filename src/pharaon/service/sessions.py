"""Log-in sessions, players' and operators' alike: a bearer token (kept only as its SHA-256), a
CSRF token, and expiry after a stretch without requests.

A request is let in by :func:`look_up` (a read, of the tokens of every request waiting at the
same moment) and, when something is due for its session (:func:`due`), :func:`keep` (a write):
its last request written at most every :data:`TOUCH_EVERY`, so most requests write nothing; a
session idle too long deleted and refused.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, Select, delete, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service.audit import operator_actor
from pharaon.service.errors import ForbiddenError, UnauthorizedError
from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import Operator, Player, SessionRow

# A session's last request is written at most this often, so most requests stay read-only.
TOUCH_EVERY = timedelta(seconds=30)


def _look_up_sql(sql: Parts) -> Select[*tuple[Any, ...]]:
    return (
        select(
            SessionRow.token_sha256,
            SessionRow.player_id,
            SessionRow.operator_id,
            SessionRow.csrf_token,
            SessionRow.last_seen_at,
            Player.email.label("player_email"),
            Operator.email.label("operator_email"),
            Operator.role,
        )
        .outerjoin(Player, Player.id == SessionRow.player_id)
        .outerjoin(Operator, Operator.id == SessionRow.operator_id)
        .where(sql.one_of(SessionRow.token_sha256, "digests"))
    )


# Built once: every authenticated request looks its session up.
_LOOK_UP = PerDialect(_look_up_sql)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str
    csrf_token: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request shows to be let in: its session's token and, when it must prove it comes
    from the page (a cookie's session, on a request that changes something), the CSRF token it
    sent (``csrf``, empty if it sent none); ``csrf`` is None when there is nothing to prove."""

    token: str
    csrf: str | None = None


@dataclass(frozen=True, slots=True)
class PlayerSession:
    """A player's valid session."""

    token_sha256: str
    csrf_token: str
    player_id: int
    email: str


@dataclass(frozen=True, slots=True)
class OperatorSession:
    """An operator's valid session."""

    token_sha256: str
    csrf_token: str
    operator_id: int
    email: str
    role: str

    @property
    def actor(self) -> str:
        """This operator's name in the audit log."""
        return operator_actor(self.email)


Holder = PlayerSession | OperatorSession
Due = Literal["touch", "expire"] | None


@dataclass(frozen=True, slots=True)
class Found:
    """A session looked up: its holder, and its last request's time."""

    holder: Holder
    last_seen_at: datetime


def create(
    session: Session,
    *,
    now: datetime,
    player_id: int | None = None,
    operator_id: int | None = None,
) -> NewSession:
    """Open a session of one player or one operator in the caller's transaction."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    session.execute(
        insert(SessionRow).values(
            token_sha256=token_digest(token),
            player_id=player_id,
            operator_id=operator_id,
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
        )
    )
    return NewSession(token, csrf, now)


def look_up(
    *, connection: Connection, requests: Sequence[str], now: datetime
) -> list[Found | UnauthorizedError]:
    """The session of each token of ``requests``, in one read; :class:`UnauthorizedError` for
    a token of no session. (``now``: when the batch is read; the caller decides what is
    :func:`due`.)"""
    del now  # what is due depends on each request's own settings (:func:`due`)
    digests = [token_digest(token) for token in requests]
    rows = {
        row.token_sha256: row
        for row in connection.execute(_LOOK_UP.on(connection), {"digests": sorted(set(digests))})
    }
    found: list[Found | UnauthorizedError] = []
    for digest in digests:
        row = rows.get(digest)
        if row is None:
            found.append(UnauthorizedError("not logged in, or the session has ended"))
            continue
        holder: Holder
        if row.player_id is not None:
            holder = PlayerSession(digest, row.csrf_token, int(row.player_id), row.player_email)
        else:
            holder = OperatorSession(
                digest, row.csrf_token, int(row.operator_id), row.operator_email, row.role
            )
        found.append(Found(holder, row.last_seen_at))
    return found


def due(found: Found, *, now: datetime, idle: timedelta) -> Due:
    """What is to be written for a session found at ``now``: ``"expire"`` once its last
    request is older than ``idle``, ``"touch"`` once older than :data:`TOUCH_EVERY`, else
    nothing."""
    if now - found.last_seen_at > idle:
        return "expire"
    if now - found.last_seen_at >= TOUCH_EVERY:
        return "touch"
    return None


def keep(*, session: Session, found: Found, due: Due, now: datetime) -> UnauthorizedError | None:
    """Write what is :func:`due` for a session, in the caller's transaction: its last
    request's time, or, for a session idle too long, its deletion and the refusal to answer
    (returned, for the caller to commit the deletion)."""
    digest = found.holder.token_sha256
    if due == "expire":
        session.execute(delete(SessionRow).where(SessionRow.token_sha256 == digest))
        return UnauthorizedError("the session expired after inactivity; log in again")
    if due == "touch":
        session.execute(
            update(SessionRow).where(SessionRow.token_sha256 == digest).values(last_seen_at=now)
        )
    return None


def check_csrf(credentials: Credentials, holder: Holder) -> None:
    """:class:`ForbiddenError` (``csrf``) unless ``credentials`` that must carry a CSRF token (a
    change asked with a cookie) carry the one of ``holder``'s session."""
    sent = credentials.csrf
    if sent is not None and not (sent and secrets.compare_digest(sent, holder.csrf_token)):
        raise ForbiddenError(
            "a change asked with the session cookie must carry the session's csrf_token",
            code="csrf",
        )


def end(*, session: Session, token_sha256: str) -> None:
    """Log out: the session is deleted."""
    session.execute(delete(SessionRow).where(SessionRow.token_sha256 == token_sha256))


def end_all(*, session: Session, player_id: int, but: str | None = None) -> None:
    """End every session of ``player_id``, but the one whose token's SHA-256 is ``but``."""
    statement = delete(SessionRow).where(SessionRow.player_id == player_id)
    if but is not None:
        statement = statement.where(SessionRow.token_sha256 != but)
    session.execute(statement)
