"""The one error shape: ``{"error": code, "detail": text}`` with the right status; and every
5xx logged once, with its cause."""

from __future__ import annotations

import logging
import re
import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from pharaon.service.errors import ServiceError
from pharaon.store.faults import (
    DatabaseRefusedValueError,
    DatabaseUnavailableError,
    Fault,
    classify,
)

STATUS = {
    "bad_request": 400,
    "unauthorized": 401,
    "insufficient_funds": 402,
    "forbidden": 403,
    "csrf": 403,
    "underage": 403,
    "self_excluded": 403,
    "suspended": 403,
    "account_closed": 403,
    "identity_unverified": 403,
    "banned": 403,
    "deposit_limit": 403,
    "loss_limit": 403,
    "stake_limit": 403,
    "moderators_required": 403,
    "not_found": 404,
    "not_revealed": 404,
    "conflict": 409,
    "email_taken": 409,
    "idempotency_conflict": 409,
    "block_refused": 409,
    "verification_failed": 409,
    "validation_error": 422,
    "locked_out": 429,
    "misconfigured": 500,
    "sold_out": 503,
    "unavailable": 503,
}
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "too_slow",
    409: "conflict",
    413: "too_large",
    422: "validation_error",
}


_RETRY_AFTER = {"locked_out": "60", "sold_out": "60", "unavailable": "5"}
DATABASE_AWAY_DETAIL = "the database is unavailable; try again shortly"
_log = logging.getLogger("pharaon.errors")
REQUEST_ID = "X-Request-Id"
_PLAIN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def error_response(
    code: str, detail: str, status: int | None = None, fields: dict[str, str] | None = None
) -> JSONResponse:
    headers = {"Retry-After": _RETRY_AFTER[code]} if code in _RETRY_AFTER else None
    return JSONResponse(
        {**(fields or {}), "error": code, "detail": detail},
        status_code=status or STATUS.get(code, 400),
        headers=headers,
    )


def _where(error: dict[str, Any]) -> str:
    parts = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "request"


def _route(request: Request) -> str:
    route = request.scope.get("route")
    return str(getattr(route, "path", "unmatched"))


async def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    if STATUS.get(exc.code, 400) >= 500 and exc.code not in _RETRY_AFTER:
        _log.error("%s %s: %s", request.method, _route(request), exc.detail)
    return error_response(exc.code, exc.detail, fields=exc.fields)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = [f"{_where(e)}: {e.get('msg', 'invalid')}" for e in exc.errors()[:5]]
    return error_response("validation_error", "; ".join(problems) or "invalid request")


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "error")
    response = error_response(code, str(exc.detail), exc.status_code)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _database_away(request: Request, exc: Exception) -> JSONResponse:
    _log.warning("%s %s: the database is away: %s", request.method, _route(request), exc)
    return error_response("unavailable", DATABASE_AWAY_DETAIL)


async def _value_refused(_request: Request, exc: Exception) -> JSONResponse:
    return error_response("validation_error", f"a value was refused by the database: {exc}"[:300])


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """A database error that did not come through a door (see web/database.py)."""
    assert isinstance(exc, SQLAlchemyError)
    fault = classify(exc)
    if fault in (Fault.UNAVAILABLE, Fault.RETRY):
        return await _database_away(request, DatabaseUnavailableError(str(exc).splitlines()[0]))
    if fault is Fault.INVALID:
        return await _value_refused(request, DatabaseRefusedValueError("out of range"))
    return await _unexpected(request, exc)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """Logged once, with its traceback and an id the answer carries too (the proxy's
    ``X-Request-Id`` if it sent a plain one), so the two can be matched; never the request's
    values (the route's template, not its path)."""
    given = request.headers.get(REQUEST_ID, "")
    request_id = given if _PLAIN_ID.fullmatch(given) else secrets.token_hex(8)
    _log.error(
        "%s %s failed", request.method, _route(request),
        exc_info=exc, extra={"request_id": request_id},
    )  # fmt: skip
    response = error_response(
        "internal_error", f"the server failed; nothing was changed (request {request_id})", 500
    )
    response.headers[REQUEST_ID] = request_id
    return response


def install(app: FastAPI) -> None:
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DatabaseUnavailableError, _database_away)
    app.add_exception_handler(DatabaseRefusedValueError, _value_refused)
    app.add_exception_handler(SQLAlchemyError, _database_error)
    app.add_exception_handler(Exception, _unexpected)
