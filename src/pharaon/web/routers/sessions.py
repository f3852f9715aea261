"""``POST /sessions`` (log in) and ``DELETE /sessions/current`` (log out)."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request, Response, status

from pharaon.service import accounts, sessions
from pharaon.service.clock import utcnow
from pharaon.service.errors import UnauthorizedError
from pharaon.web.deps import CSRF_COOKIE, SESSION_COOKIE, CurrentPlayer, SessionDep, SettingsDep
from pharaon.web.schemas import LoginIn, SessionOut

router = APIRouter(tags=["sessions"])


@router.post("/sessions")
def log_in(
    body: LoginIn,
    request: Request,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
) -> SessionOut:
    """Log in: a bearer token for API clients, and cookies for the page."""
    try:
        created = accounts.log_in(
            session=session,
            email=body.email,
            password=body.password,
            now=utcnow(),
            max_failures=settings.lockout_failures,
            lockout=timedelta(minutes=settings.lockout_minutes),
            client=request.client.host if request.client else None,
            max_address_failures=settings.lockout_address_failures,
        )
    except UnauthorizedError:
        session.commit()  # the failure's count stays: it is what locks a guesser out
        raise
    # Over HTTPS (as a trusted proxy says, see serve --forwarded-allow-ips) always Secure.
    secure = settings.cookie_secure or request.url.scheme == "https"
    response.set_cookie(
        SESSION_COOKIE, created.token, httponly=True, samesite="strict", path="/", secure=secure
    )
    response.set_cookie(
        CSRF_COOKIE, created.csrf_token, httponly=False, samesite="strict", path="/", secure=secure
    )
    idle = timedelta(minutes=settings.session_idle_minutes)
    session.commit()
    return SessionOut(
        token=created.token, csrf_token=created.csrf_token, expires_at=created.created_at + idle
    )


@router.delete("/sessions/current", status_code=status.HTTP_204_NO_CONTENT)
def log_out(current: CurrentPlayer, session: SessionDep) -> Response:
    """End the session."""
    sessions.end(session=session, token_sha256=current.token_sha256)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    response.delete_cookie(SESSION_COOKIE, path="/", samesite="strict", httponly=True)
    response.delete_cookie(CSRF_COOKIE, path="/", samesite="strict")
    session.commit()
    return response
