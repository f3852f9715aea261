"""Dependencies of the routes, as ``Annotated`` aliases."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any

from anyio import CapacityLimiter, to_thread
from fastapi import Depends, Header, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from pharaon.service import sessions
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError, UnauthorizedError
from pharaon.service.idempotency import MAX_KEY_LENGTH
from pharaon.store.engine import has_uncommitted_writes
from pharaon.store.settings import Settings
from pharaon.web.desk import ReadDesk, SessionDesk

SESSION_COOKIE = "pharaon_session"
CSRF_COOKIE = "pharaon_csrf"
CSRF_HEADER = "X-CSRF-Token"
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_log = logging.getLogger(__name__)


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _session(request: Request) -> AsyncIterator[Session]:
    """The request's session. A route (or dependency) that uses it ends its unit of work
    itself, ``session.commit()`` on its own thread before it returns: FastAPI may need another
    of the routes' threads after it (to check the answer), and those may all be taken by
    routes waiting for the locks (SQLite's writer, PostgreSQL's rows) an open transaction
    holds. What is left open when the route raises is rolled back at closing, on a thread of
    its own (:data:`_CLOSINGS`) for the same reason."""
    factory: sessionmaker[Session] = request.app.state.sessionmaker
    session = factory()
    try:
        yield session
        # The route returned: writes it left uncommitted would be lost behind a success.
        if has_uncommitted_writes(session):
            _log.error(
                "%s %s returned without committing its writes", request.method, request.url.path
            )
            raise UncommittedWritesError(request.url.path)
    finally:
        await to_thread.run_sync(session.close, limiter=_CLOSINGS)


class UncommittedWritesError(RuntimeError):
    """A route returned with writes it had not committed (a bug: they are rolled back and the
    answer is a 500, never a success that did not happen)."""


_CLOSINGS = CapacityLimiter(64)


async def _reader(request: Request) -> Engine:
    reader: Engine = request.app.state.reader
    return reader


async def _read_desk(request: Request) -> ReadDesk:
    desk: ReadDesk = request.app.state.read_desk
    return desk


SettingsDep = Annotated[Settings, Depends(_settings)]
# scope="function": closed (what a failed route left rolled back) before the answer is sent.
SessionDep = Annotated[Session, Depends(_session, scope="function")]
# For a read of one statement (:func:`pharaon.store.engine.make_reader`): no transaction, and
# on SQLite no wait for the writer. An async route gives it to the read desk (ReadsDep), which
# runs the reads waiting together on one connection; a route in a thread connects itself.
ReaderDep = Annotated[Engine, Depends(_reader)]
ReadsDep = Annotated[ReadDesk, Depends(_read_desk)]


def shown(request: Request, cookie: str, missing: str) -> sessions.Credentials:
    """What the request shows to be let in: a bearer token, or the session cookie ``cookie``
    (with the CSRF header on state-changing requests); :class:`UnauthorizedError` (``missing``)
    if neither. The players' routes and the operator's read them the same way."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise UnauthorizedError("the Authorization header must be 'Bearer <token>'")
        return sessions.Credentials(token.strip())
    token = request.cookies.get(cookie, "").strip()
    if not token:
        raise UnauthorizedError(missing)
    if request.method in _UNSAFE:
        return sessions.Credentials(token, request.headers.get(CSRF_HEADER, ""))
    return sessions.Credentials(token)


async def credentials(request: Request) -> sessions.Credentials:
    """A player's credentials (:func:`shown`)."""
    return shown(request, SESSION_COOKIE, "not logged in")


CredentialsDep = Annotated[sessions.Credentials, Depends(credentials)]


async def current_player(request: Request, shown: CredentialsDep) -> sessions.Current:
    """The player of the request's session; :class:`UnauthorizedError` or
    :class:`ForbiddenError`."""
    # The session desk looks up the tokens of the requests waiting together in one read, off the
    # event loop (on SQLite it never waits for the writer). The rare write it asks for goes to a
    # worker thread.
    doorman: SessionDesk = request.app.state.session_desk
    found = await doorman.ask(shown.token)
    if found.due is None:
        let_in = sessions.admit(found.current, shown)
    else:
        outcome = await run_in_threadpool(_let_in, request, found, shown, utcnow())
        if isinstance(outcome, ServiceError):
            raise outcome
        let_in = outcome
    request.state.player_id = let_in.player_id  # for the access log (web/observe.py)
    return let_in


def _let_in(
    request: Request, found: sessions.Found, shown: sessions.Credentials, now: datetime
) -> sessions.Current | ServiceError:
    writers: sessionmaker[Session] = request.app.state.sessionmaker
    with writers() as session:
        (let_in,) = sessions.let_in_many(
            session=session, found=[found], credentials=[shown], now=now
        )
        session.commit()
    return let_in


CurrentPlayer = Annotated[sessions.Current, Depends(current_player)]
IDEMPOTENCY_HEADER = "Idempotency-Key"
# Checked by the service (400 when missing or malformed); documented by IDEMPOTENCY_KEY_DOC.
IdempotencyKey = Annotated[str | None, Header(alias=IDEMPOTENCY_HEADER, include_in_schema=False)]
# The OpenAPI entry of the Idempotency-Key header, for the routes that charge or credit: what
# service/idempotency.py accepts (required; 1..200 printable characters, spaces not at the ends
# since HTTP trims them).
IDEMPOTENCY_KEY_DOC: dict[str, Any] = {
    "parameters": [
        {
            "name": IDEMPOTENCY_HEADER,
            "in": "header",
            "required": True,
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_KEY_LENGTH,
                "pattern": "^[!-~]([ -~]*[!-~])?$",
                "title": IDEMPOTENCY_HEADER,
            },
        }
    ]
}
