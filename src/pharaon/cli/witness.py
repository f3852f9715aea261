"""`pharaon witness`: watch a server's audit log and cosign its checkpoints, or refuse.

Run apart from the server, with a key of its own, by whoever must be able to say later that the
log was never rewritten (a regulator, an auditor). Every ``--interval`` seconds it fetches the
server's latest signed checkpoint (``GET /api/v1/audit/checkpoint``), checks the operator's
signature with ``--log-key``, fetches the consistency proof from the checkpoint it cosigned
last (``GET /api/v1/audit/proofs/consistency``) and checks it (pharaon.pool.witness); then
cosigns (c2sp.org/tlog-cosignature, cosignature/v1), keeps the cosigned note in ``--state``
before anything else, and sends it to the server (``POST /api/v1/audit/cosignatures``), which
publishes it. With ``--listen`` it also serves its last cosigned checkpoint (``GET
/checkpoint``) and its verifier key (``GET /key``). A checkpoint it must refuse ends it: one
line ``REFUSED: …`` on stderr, exit 1, nothing cosigned.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click

from pharaon.cli.app import app, fail
from pharaon.pool import notes
from pharaon.pool.keys import SeedKeyError, read_key_file
from pharaon.pool.witness import RefusedError, Witnessed, judge

_log = logging.getLogger("pharaon.witness")
REFUSED = 1
_TIMEOUT = 10.0
_API = "/api/v1"


class UnavailableError(Exception):
    """The server could not be asked (down, slow, 5xx): tried again at the next poll."""


class _Server:
    """The log's server, over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _ask(self, path: str, body: Any = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + _API + path,
            data=data,
            headers={"Content-Type": "application/json"} if data else {},
            method="GET" if data is None else "POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as exc:
            if exc.code >= 500:
                raise UnavailableError(f"{path}: HTTP {exc.code}") from None
            detail = exc.read(500).decode("utf-8", "replace")
            raise RefusedError(f"the log answered {path} with HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise UnavailableError(f"{path}: {getattr(exc, 'reason', exc)}") from None

    def checkpoint(self) -> str:
        try:
            return self._ask("/audit/checkpoint").decode("utf-8")
        except UnicodeDecodeError:
            raise RefusedError("the log's checkpoint is not UTF-8 text") from None

    def consistency(self, first: int, second: int) -> list[bytes]:
        answer = self._ask(f"/audit/proofs/consistency?first={first}&second={second}")
        try:
            data = json.loads(answer)
            return [bytes.fromhex(h) for h in data["proof"]]
        except (ValueError, KeyError, TypeError):
            raise RefusedError("the log's consistency proof is not one") from None

    def send(self, note: str) -> None:
        """Give the server a cosigned note to publish; a failure is said, and the note sent
        again at the next poll."""
        try:
            self._ask("/audit/cosignatures", {"note": note})
        except (RefusedError, UnavailableError) as exc:
            _log.warning("the server did not take the cosignature: %s", exc)


class _Shown:
    """What the witness serves: its last cosigned note, and its key."""

    def __init__(self, vkey: str, last: Witnessed | None) -> None:
        self.vkey = vkey
        self.last = last


def _serve(address: str, shown: _Shown) -> ThreadingHTTPServer:
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not host:
        fail(f"--listen must be HOST:PORT, got {address!r}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/checkpoint" and shown.last is not None:
                self._answer(200, shown.last.note)
            elif self.path == "/key":
                self._answer(200, shown.vkey + "\n")
            else:
                self._answer(404, "not found\n")

        def _answer(self, code: int, text: str) -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the witness logs what it decides, not who read it."""

    try:
        server = ThreadingHTTPServer((host, int(port)), Handler)
    except OSError as exc:
        fail(f"cannot listen on {address}: {exc.strerror or exc}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _read_state(path: Path) -> Witnessed | None:
    if not path.exists():
        return None
    try:
        return Witnessed.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        fail(f"the state file {path}: {exc}")


def _write_state(path: Path, witnessed: Witnessed) -> None:
    """Replace the state at once (a crash leaves the old or the new, never half)."""
    part = path.with_name(path.name + ".new")
    part.write_text(witnessed.to_json(), encoding="utf-8")
    os.replace(part, path)


def _poll(
    server: _Server,
    *,
    log_key: notes.Verifier,
    signer: notes.Signer,
    state: Path,
    shown: _Shown,
) -> None:
    """Fetch, judge, keep and send one checkpoint."""
    note = server.checkpoint()
    last = shown.last
    cosigned = judge(
        note,
        log_key=log_key,
        signer=signer,
        last=last,
        consistency=server.consistency,
        now=int(time.time()),
    )
    if cosigned is None:  # the checkpoint held: sent again if the server does not show it
        if last is not None and not notes.parse(note).signed_by(signer.verifier):
            server.send(last.note)
        return
    _write_state(state, cosigned)  # kept before it is shown: never two views cosigned
    shown.last = cosigned
    _log.info("cosigned the checkpoint of %d records", cosigned.size)
    server.send(cosigned.note)


@app.command("witness")
@click.option("--url", required=True, help="The pharaon server, e.g. https://pharaon.example.")
@click.option(
    "--log-key",
    help="The log's verifier key (GET /api/v1/audit/key's verifier_key), got out of band.",
)
@click.option(
    "--key",
    "key_file",
    type=click.Path(path_type=Path),
    required=True,
    help="This witness's key file (pharaon keys new --out FILE; mode 0600).",
)
@click.option(
    "--name", required=True, help="This witness's key name, e.g. regulator.example/witness."
)
@click.option(
    "--state",
    type=click.Path(path_type=Path),
    help="The file keeping the last cosigned checkpoint (made if missing).",
)
@click.option(
    "--interval",
    type=click.IntRange(1, 86_400),
    default=60,
    show_default=True,
    help="Seconds between two polls.",
)
@click.option("--listen", help="HOST:PORT to serve the last cosigned checkpoint at /checkpoint.")
@click.option("--once", is_flag=True, help="Poll once, then stop.")
@click.option(
    "--vkey",
    is_flag=True,
    help="Print this witness's verifier key (PHARAON_WITNESS_KEYS) and stop.",
)
def witness_command(  # noqa: PLR0917 (click passes its options by name)
    url: str,
    log_key: str | None,
    key_file: Path,
    name: str,
    state: Path | None,
    interval: int,
    listen: str | None,
    once: bool,
    vkey: bool,
) -> None:
    """Cosign the server's audit checkpoints while each is consistent with the last cosigned;
    refuse (exit 1, one line) the first that is not."""
    try:
        signer = notes.Signer(name, read_key_file(key_file, "witness"), kind=notes.COSIGNATURE_V1)
    except (SeedKeyError, notes.NoteError) as exc:
        fail(str(exc))
    if vkey:
        click.echo(signer.verifier.vkey)
        return
    if log_key is None or state is None:
        fail("give --log-key and --state")
    if not url.startswith(("http://", "https://")):
        fail(f"--url must start with http:// or https://, got {url!r}")
    try:
        log = notes.parse_vkey(log_key)
    except notes.NoteError as exc:
        fail(f"--log-key: {exc}")
    if log.kind != notes.ED25519:
        fail("--log-key must be the log's Ed25519 (0x01) verifier key")
    logging.basicConfig(stream=sys.stderr, format="pharaon witness: %(message)s")
    _log.setLevel(logging.INFO)
    shown = _Shown(signer.verifier.vkey, _read_state(state))
    listening = None if listen is None else _serve(listen, shown)
    server = _Server(url)
    try:
        while True:
            try:
                _poll(server, log_key=log, signer=signer, state=state, shown=shown)
            except RefusedError as exc:
                _log.error("REFUSED: %s", exc)
                raise click.exceptions.Exit(REFUSED) from None
            except UnavailableError as exc:
                if once:
                    fail(f"the log could not be asked: {exc}")
                _log.warning("the log could not be asked, tried again in %d s: %s", interval, exc)
            except OSError as exc:
                fail(f"cannot keep the state in {state}: {exc.strerror or exc}")
            if once:
                return
            time.sleep(interval)
    finally:
        if listening is not None:
            listening.shutdown()
