"""``POST /sessions`` (log in) and ``DELETE /sessions/current`` (log out)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from pharaon.service import accounts, passwords
from pharaon.service.clock import utcnow
from pharaon.service.errors import UnauthorizedError
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    CurrentPlayer,
    SettingsDep,
    client_address,
    closed_session,
    hashed,
    open_session,
    seen,
    throttle,
    verified,
)
from pharaon.web.schemas import LoginIn, SessionOut

router = APIRouter(tags=["sessions"])


@router.post("/sessions")
async def log_in(
    body: LoginIn, request: Request, response: Response, db: DatabaseDep, settings: SettingsDep
) -> SessionOut:
    """Log in: a bearer token for API clients, and cookies for the page. Locked out (429) for
    a while after repeated failures for the email, or from the address."""
    email = accounts.login_email(body.email)
    attempt = await db.write(
        accounts.begin_log_in,
        email=email,
        client=client_address(request),
        throttle=throttle(settings),
        now=utcnow(),
    )
    # Between the transactions: the attempt is counted against its account, no lock is held.
    if not await verified(attempt.password_hash, body.password):
        await db.write(accounts.log_in_failed, attempt=attempt, now=utcnow())
        raise UnauthorizedError(accounts.WRONG)
    new_hash = None
    if attempt.password_hash is not None and passwords.needs_rehash(attempt.password_hash):
        new_hash = await hashed(body.password)
    created = await db.write(
        accounts.finish_log_in, attempt=attempt, now=utcnow(), new_hash=new_hash
    )
    return open_session(
        request, response, settings, created, cookie=SESSION_COOKIE, csrf_cookie=CSRF_COOKIE
    )


@router.delete("/sessions/current", status_code=status.HTTP_204_NO_CONTENT)
async def log_out(current: CurrentPlayer, request: Request, db: DatabaseDep) -> Response:
    """End the session."""
    await db.write(
        accounts.log_out,
        player_id=current.player_id,
        token_sha256=current.token_sha256,
        seen=seen(request, current),
        now=utcnow(),
    )
    return closed_session(cookie=SESSION_COOKIE, csrf_cookie=CSRF_COOKIE)
