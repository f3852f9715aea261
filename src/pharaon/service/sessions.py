"""Log-in sessions in the database: a bearer token (kept only as its SHA-256), a CSRF token,
and expiry after a stretch without requests."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service.errors import ForbiddenError, ServiceError, UnauthorizedError
from pharaon.store.tables import Player, SessionRow

# A session's last request is written at most this often, so most requests stay read-only.
TOUCH_EVERY = timedelta(seconds=30)

# Built once: every authenticated request looks its session up.
_LOOKUP = (
    select(
        SessionRow.token_sha256,
        SessionRow.player_id,
        SessionRow.csrf_token,
        SessionRow.last_seen_at,
        Player.email,
        Player.self_excluded_until,
    )
    .join(Player, Player.id == SessionRow.player_id)
    .where(SessionRow.token_sha256.in_(bindparam("digests", expanding=True)))
)


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
class Current:
    """The player behind a valid session."""

    player_id: int
    email: str
    csrf_token: str
    self_excluded_until: datetime | None
    token_sha256: str


Due = Literal["touch", "expire"] | None


@dataclass(frozen=True, slots=True)
class Found:
    """A session looked up, and what is due to be written for it (see :func:`lookup_many`)."""

    current: Current
    due: Due


def create(session: Session, *, player_id: int, now: datetime) -> NewSession:
    """Insert a session in the caller's transaction."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    session.execute(
        insert(SessionRow).values(
            token_sha256=token_digest(token),
            player_id=player_id,
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
        )
    )
    return NewSession(token, csrf, now)


def lookup_many(
    *, connection: Connection, tokens: Sequence[str], now: datetime, idle: timedelta
) -> list[Found | UnauthorizedError]:
    """For each token, its player and what its session needs written, or
    :class:`UnauthorizedError` if the token is unknown; in one read (``connection`` may be a
    reader's: :func:`pharaon.store.engine.make_reader`).

    Most requests write nothing: the session's last request is written at most every 30 s
    (``Found.due == "touch"``); one idle over ``idle`` is to be deleted (``"expire"``) and
    refused. :func:`let_in_many` does either.
    """
    digests = [token_digest(token) for token in tokens]
    rows = {
        row.token_sha256: row
        for row in connection.execute(_LOOKUP, {"digests": sorted(set(digests))})
    }
    found: list[Found | UnauthorizedError] = []
    for digest in digests:
        row = rows.get(digest)
        if row is None:
            found.append(UnauthorizedError("not logged in, or the session has ended"))
            continue
        due: Due = None
        if now - row.last_seen_at > idle:
            due = "expire"
        elif now - row.last_seen_at >= TOUCH_EVERY:
            due = "touch"
        current = Current(
            int(row.player_id), row.email, row.csrf_token, row.self_excluded_until, digest
        )
        found.append(Found(current, due))
    return found


def admit(current: Current, credentials: Credentials) -> Current:
    """``current``, once ``credentials`` carry the CSRF token of its session if they must; else
    :class:`ForbiddenError`."""
    check_csrf(
        credentials,
        current.csrf_token,
        "a change asked with the session cookie must carry the session's csrf_token",
    )
    return current


def check_csrf(credentials: Credentials, csrf_token: str, refusal: str) -> None:
    """:class:`ForbiddenError` (``refusal``) unless ``credentials`` that must carry a CSRF
    token (a change asked with a cookie) carry ``csrf_token``; players' and operators'."""
    sent = credentials.csrf
    if sent is not None and not (sent and secrets.compare_digest(sent, csrf_token)):
        raise ForbiddenError(refusal, code="csrf")


def let_in_many(
    *,
    session: Session,
    found: Sequence[Found | UnauthorizedError],
    credentials: Sequence[Credentials],
    now: datetime,
) -> list[Current | ServiceError]:
    """For each of ``credentials``, the player it lets in, or the :class:`UnauthorizedError`
    or :class:`ForbiddenError` that keeps it out; ``found``: :func:`lookup_many` of their
    tokens. What is due for the sessions is written in the caller's transaction (which the
    caller commits, also when it keeps every one out), once per session and in token order."""
    due = {f.current.token_sha256: f for f in found if isinstance(f, Found) and f.due}
    ended: dict[str, str] = {}  # digest: why its session is over
    for digest in sorted(due):
        try:
            _write_due(session=session, found=due[digest], now=now)
        except UnauthorizedError as exc:
            ended[digest] = exc.detail
    let_in: list[Current | ServiceError] = []
    for one, shown in zip(found, credentials, strict=True):
        if isinstance(one, UnauthorizedError):
            let_in.append(one)
        elif one.current.token_sha256 in ended:
            let_in.append(UnauthorizedError(ended[one.current.token_sha256]))
        else:
            try:
                let_in.append(admit(one.current, shown))
            except ForbiddenError as exc:
                let_in.append(exc)
    return let_in


def _write_due(*, session: Session, found: Found, now: datetime) -> None:
    """Write what :func:`lookup_many` found due, in the caller's transaction; an expired
    session is deleted and refused (:class:`UnauthorizedError`: commit all the same)."""
    digest = found.current.token_sha256
    if found.due == "expire":
        session.execute(delete(SessionRow).where(SessionRow.token_sha256 == digest))
        raise UnauthorizedError("the session expired after inactivity; log in again")
    if found.due == "touch":
        session.execute(
            update(SessionRow).where(SessionRow.token_sha256 == digest).values(last_seen_at=now)
        )


def end(*, session: Session, token_sha256: str) -> None:
    """Log out: the session is deleted."""
    session.execute(delete(SessionRow).where(SessionRow.token_sha256 == token_sha256))
