"""The ASGI middleware that guards every answer and request: security headers, and a cap on
the size of request bodies (413 before a body is read whole). Slow or idle clients are cut off by
the proxy in front (deploy/haproxy.cfg)."""

from __future__ import annotations

import json

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
# The largest body any route takes is a few hundred bytes; 64 KiB leaves room and no more.
MAX_BODY_BYTES = 64 * 1024
# But an operator uploads block files (75 MB for 1,000,000 units).
UPLOAD_PATH = "/api/v1/operator/blocks"
UPLOAD_BODY_BYTES = 256 * 1024 * 1024


class Guards:
    """Guards every HTTP request and answer, in one layer:

    - adds :data:`SECURITY_HEADERS` and the CSP to every answer (the API's reference at
      /api/docs included: Swagger UI's files served here, started by a script of ours, no inline
      script and nothing from outside);
    - refuses a request whose body is over :data:`MAX_BODY_BYTES` (:data:`UPLOAD_BODY_BYTES`
      for a block's upload) with 413 and the one error shape: at once when its Content-Length
      says so, else (a chunked body) as soon as the bytes received pass it. A body within its
      Content-Length is not watched: the HTTP server reads no more than that. (FastAPI's own
      cap answers plain text when the Content-Length is over it.)
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = UPLOAD_BODY_BYTES if scope["path"] == UPLOAD_PATH else MAX_BODY_BYTES
        length = _content_length(scope)
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _too_large(_with_headers(send), limit)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", ()), *_ADDED]
            await send(message)

        if length is not None:  # framed by its length: nothing more to watch
            await self.app(scope, receive, send_with_headers)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLargeError(limit)
            return message

        try:
            await self.app(scope, counting_receive, send_with_headers)
        except _BodyTooLargeError:
            if not started:
                await _too_large(send_with_headers, limit)


_ADDED = (*SECURITY_HEADERS, CSP_HEADER)


def _content_length(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return bytes(value)
    return None


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *_ADDED]
        await send(message)

    return sending


class _BodyTooLargeError(HTTPException):
    """Raised from ``receive`` when the bytes pass the cap: an HTTPException, so that the
    route's body parsing lets it through and errors.py answers it (413, ``too_large``)."""

    def __init__(self, limit: int) -> None:
        # The rest of the body is not read: the connection closes after the answer.
        detail = f"the body must be at most {limit} bytes"
        super().__init__(413, detail, headers={"Connection": "close"})


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps(
        {"error": "too_large", "detail": f"the body must be at most {limit} bytes"}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the rest of the body is not read
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
