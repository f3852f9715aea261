"""Dependencies of the routes, as ``Annotated`` aliases: the settings, and who asks.

Players and operators are let in the same way (:func:`_let_in`, over
:mod:`pharaon.service.sessions`): a bearer token, or the session cookie with its CSRF header
on a request that changes something. The session is read through the reader, with the others
asked at the same moment; a write goes through the writer only when one is due (its last
request's time, every 30 s; an idle session's deletion).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request, Response

from pharaon.service import logins, passwords, sessions, stock, traces
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError, UnauthorizedError
from pharaon.service.idempotency import MAX_KEY_LENGTH
from pharaon.service.operators import require_admin, require_auditor
from pharaon.settings import Settings
from pharaon.web.database import Database
from pharaon.web.schemas import SessionOut

SESSION_COOKIE = "pharaon_session"
CSRF_COOKIE = "pharaon_csrf"
OPERATOR_COOKIE = "pharaon_operator"
OPERATOR_CSRF_COOKIE = "pharaon_operator_csrf"
CSRF_HEADER = "X-CSRF-Token"
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(_settings)]


def throttle(settings: Settings) -> logins.Throttle:
    """The lock-out of log-ins the settings ask for."""
    return logins.Throttle(
        per_account=settings.lockout_failures,
        per_address=settings.lockout_address_failures,
        lockout=timedelta(minutes=settings.lockout_minutes),
    )


def thresholds(settings: Settings) -> stock.Thresholds:
    """The operator's alerts' thresholds the settings ask for."""
    return stock.Thresholds(
        stock_hours=settings.stock_alert_hours,
        stock_units=settings.stock_alert_units,
        band_sigmas=settings.payout_band_sigmas,
        large_lot_cents=settings.large_lot_cents,
    )


def client_address(request: Request) -> str | None:
    """The client's address (the proxy's word for it behind ``--forwarded-allow-ips``)."""
    return request.client.host if request.client else None


def seen(request: Request, holder: sessions.Holder | None = None) -> traces.Seen:
    """Where a request came from, for the regulator's trace: its session (if let in) and its
    client's address."""
    ref = traces.session_id(holder.token_sha256) if holder is not None else None
    return traces.Seen(ref, client_address(request))


async def trace_refusal(
    request: Request,
    db: Database,
    current: sessions.PlayerSession,
    refused: ServiceError,
    kind: str,
    **details: Any,
) -> None:
    """Trace a deposit or a purchase ``refused`` for one of :data:`traces.REFUSALS`, in a write
    of its own (the refused one was rolled back)."""
    if refused.code in traces.REFUSALS:
        await db.write(
            traces.record,
            kind=kind,
            player_id=current.player_id,
            seen=seen(request, current),
            now=utcnow(),
            refusal=refused.code,
            **details,
        )


def shown(request: Request, cookie: str, missing: str) -> sessions.Credentials:
    """What the request shows to be let in: a bearer token, or the session cookie ``cookie``
    (with the CSRF header on state-changing requests); :class:`UnauthorizedError` (``missing``)
    if neither."""
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


async def _let_in(
    request: Request, db: Database, settings: Settings, cookie: str, missing: str
) -> sessions.Holder:
    """The holder of the request's session (:func:`shown`); 401 or 403 ``csrf`` if none."""
    credentials = shown(request, cookie, missing)
    # Looked up with the tokens of the requests waiting at the same moment, in one read.
    found = await db.read_together(sessions.look_up, credentials.token)
    now = utcnow()
    due = sessions.due(found, now=now, idle=timedelta(minutes=settings.session_idle_minutes))
    if due is not None:
        await db.write(sessions.keep, found=found, due=due, now=now)
    sessions.check_csrf(credentials, found.holder)
    return found.holder


async def current_player(request: Request) -> sessions.PlayerSession:
    """The player of the request's session."""
    # The database and the settings from the application's state, not as dependencies: every
    # request of a player solves this one, and FastAPI solves each dependency anew.
    db: Database = request.app.state.database
    settings: Settings = request.app.state.settings
    holder = await _let_in(request, db, settings, SESSION_COOKIE, "not logged in")
    if not isinstance(holder, sessions.PlayerSession):
        raise UnauthorizedError("not logged in as a player")
    request.state.player_id = holder.player_id  # for the access log (web/observe.py)
    return holder


async def current_operator(request: Request) -> sessions.OperatorSession:
    """The operator of the request's session."""
    db: Database = request.app.state.database
    settings: Settings = request.app.state.settings
    holder = await _let_in(request, db, settings, OPERATOR_COOKIE, "not logged in as an operator")
    if not isinstance(holder, sessions.OperatorSession):
        raise UnauthorizedError("not logged in as an operator")
    request.state.operator_id = holder.operator_id  # for the access log (web/observe.py)
    return holder


CurrentPlayer = Annotated[sessions.PlayerSession, Depends(current_player)]
CurrentOperator = Annotated[sessions.OperatorSession, Depends(current_operator)]


async def _admin(current: CurrentOperator) -> sessions.OperatorSession:
    """The current operator if an admin; 403 for an analyst."""
    return require_admin(current)


AdminOperator = Annotated[sessions.OperatorSession, Depends(_admin)]


async def _auditor(current: CurrentOperator) -> sessions.OperatorSession:
    """The current operator if an auditor; 403 for an admin or an analyst."""
    return require_auditor(current)


AuditorOperator = Annotated[sessions.OperatorSession, Depends(_auditor)]


async def hashed(password: str) -> str:
    """``password``'s hash, made on the hashing threads (:data:`passwords.HASHING`)."""
    return await asyncio.wrap_future(passwords.HASHING.submit(passwords.hash_password, password))


async def verified(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``, checked on the hashing threads."""
    return await asyncio.wrap_future(
        passwords.HASHING.submit(passwords.verify_password, password_hash, password)
    )


# A row's id in a path: what the database's integer column holds.
RowId = Annotated[int, Path(ge=1, le=2**31 - 1)]

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


def open_session(
    request: Request,
    response: Response,
    settings: Settings,
    created: sessions.NewSession,
    *,
    cookie: str,
    csrf_cookie: str,
) -> SessionOut:
    """The answer to a log-in: the session's cookies for the page (``Secure`` over HTTPS, as a
    trusted proxy says: see serve --forwarded-allow-ips), its tokens for API clients."""
    secure = settings.cookie_secure or request.url.scheme == "https"
    response.set_cookie(
        cookie, created.token, httponly=True, samesite="strict", path="/", secure=secure
    )
    response.set_cookie(
        csrf_cookie, created.csrf_token, httponly=False, samesite="strict", path="/", secure=secure
    )
    idle = timedelta(minutes=settings.session_idle_minutes)
    return SessionOut(
        token=created.token, csrf_token=created.csrf_token, expires_at=created.created_at + idle
    )


def closed_session(*, cookie: str, csrf_cookie: str) -> Response:
    """The answer to a log-out: 204, the session's cookies removed."""
    response = Response(status_code=204)
    response.delete_cookie(cookie, path="/", samesite="strict", httponly=True)
    response.delete_cookie(csrf_cookie, path="/", samesite="strict")
    return response
