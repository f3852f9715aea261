"""ASGI middlewares that guard every answer and request: security headers, and a cap on the
size of request bodies (413 before a body is read whole) and on the time to send them (408)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The page loads its scripts, styles and images from this origin only, and no inline script,
# style or handler runs; nobody may frame it.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
CSP_HEADER = (b"content-security-policy", CSP.encode())
# FastAPI's Swagger page at /api/docs is an inline script over a CDN's files: it keeps the other
# headers but not the page's CSP (which would blank it).
NO_CSP_PATHS = frozenset({"/api/docs", "/api/docs/oauth2-redirect"})
# The largest body any route takes is a few hundred bytes; 64 KiB leaves room and no more.
MAX_BODY_BYTES = 64 * 1024
# But an operator uploads block files (75 MB for 1,000,000 units): more bytes, more time.
LARGE_BODY_PATHS = {"/api/v1/operator/blocks": (256 * 1024 * 1024, 600.0)}


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` and the CSP to every HTTP answer (the CSP not to the API's
    Swagger page)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        added = SECURITY_HEADERS
        if scope["path"] not in NO_CSP_PATHS:
            added = [*added, CSP_HEADER]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *added]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyTooLargeError(HTTPException):
    """Raised from ``receive`` when the bytes pass the cap: an HTTPException, so that the
    route's body parsing lets it through and errors.py renders it (413, ``too_large``)."""

    def __init__(self, max_bytes: int) -> None:
        # The rest of the body is not read: the connection closes after the answer.
        super().__init__(
            413, f"the body must be at most {max_bytes} bytes", headers={"Connection": "close"}
        )


class BodyTooSlowError(HTTPException):
    """Raised from ``receive`` when a body is not all in by its deadline (408, ``too_slow``)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            f"the body must be sent within {seconds:g} seconds",
            headers={"Connection": "close"},
        )


class BodyLimit:
    """Refuses a request whose body is over ``max_bytes`` with 413 and the error shape: at
    once when its Content-Length says so, else as soon as the bytes received pass it; and one
    whose body is not all in ``seconds`` after the route starts reading it with 408 (a client
    sending a byte a second holds no more than that)."""

    def __init__(self, app: ASGIApp, *, seconds: float, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, seconds = LARGE_BODY_PATHS.get(scope["path"], (self.max_bytes, self.seconds))
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await self._refuse(send, 413, "too_large", f"the body must be at most {limit} bytes")
            return
        received = 0
        deadline: float | None = None
        body_done = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, deadline, body_done
            if body_done:  # later reads only wait for a disconnection: no deadline
                return await receive()
            deadline = deadline or asyncio.get_running_loop().time() + seconds
            try:
                # A timer, not wait_for's task per read: most bodies are in at the first read.
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise BodyTooSlowError(seconds) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
                body_done = not message.get("more_body", False)
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except BodyTooLargeError as exc:
            if not started:
                await self._refuse(send, 413, "too_large", exc.detail)
        except BodyTooSlowError as exc:
            if not started:
                await self._refuse(send, 408, "too_slow", exc.detail)

    async def _refuse(self, send: Send, status: int, code: str, detail: str) -> None:
        body = json.dumps({"error": code, "detail": detail}).encode()
        headers: list[Any] = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
