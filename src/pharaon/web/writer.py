"""One writer per server: the process that runs the writes of all of a server's HTTP workers.

A worker parses HTTP, reads (its own reader threads) and hands every write to the writer,
which serves them at the doors of :class:`pharaon.web.database.Database`, as a server of one
process did: the purchases of all workers waiting at the same moment are sold in one
transaction, on threads that never share an interpreter with HTTP parsing (a batch's round
trips no longer wait for the event loop to give the GIL back: docs/performance.md). On SQLite
the writer is SQLite's one writer, so a server on SQLite may have several workers too, each
reading in WAL.

- :class:`pharaon.web.serve.WriterProcess` (in the server's supervisor) starts the writer
  before the workers, starts another when it dies, and stops it after them.
- :func:`run` is the writer process: it listens on a Unix socket in a folder only the server's
  user may enter (that folder's mode is the lock on the door), with
  :mod:`multiprocessing.connection`, one line per worker.
- :class:`WriterLine` is a worker's line to it (``Database(..., writer=line)``).

On a line, a worker sends lists of ``(id, job)`` (a :class:`~pharaon.web.database.Write` or
:class:`~pharaon.web.database.WriteTogether`: a service function, by its name, and its
arguments) and the writer answers lists of ``(id, outcome)``, the outcome an answer or the
exception to raise. Each request waits for its answer no longer than its deadline in the
worker (a 503 after it, the outcome unknown), and a job whose deadline passed before its batch
began is left out in the writer. A writer that dies, or a line that breaks, answers every
request waiting on it with :class:`DatabaseUnavailableError` (503): nothing committed is
lost (the database rolled the unfinished transaction back, and a retry with the same
Idempotency-Key finds what was sold), and the next request connects to the writer started in
its place.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import logging
import logging.config
import math
import os
import queue
import signal
import socket
import threading
import time
import traceback
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

from pharaon.service.errors import ServiceError
from pharaon.store.faults import DatabaseRefusedValueError, DatabaseUnavailableError
from pharaon.web.database import Write, WriteTogether, drained
from pharaon.web.serve import READY

PR_SET_NAME = 15  # linux/prctl.h
NAME = "pharaon-writer"  # the process's name in ps and /proc/PID/comm
CONNECT_PAUSE = 0.05  # between two tries to reach a writer that is starting
MAX_SENT = 256  # jobs in one message on a line
_KNOWN = (ServiceError, DatabaseUnavailableError, DatabaseRefusedValueError)
_log = logging.getLogger(__name__)


# The worker's side.


@dataclass(eq=False)
class _Link:
    """One connection to the writer, the requests waiting on it (touched on the event loop
    only) and the jobs to send (by its sender thread)."""

    connection: Connection
    loop: asyncio.AbstractEventLoop
    waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    outbox: queue.SimpleQueue[tuple[int, Write | WriteTogether] | None] = field(
        default_factory=queue.SimpleQueue
    )
    broken: bool = False


class WriterLine:
    """A worker's line to its server's writer at ``address``: a connection made at the first
    request, made again after it broke; a writer that is starting is waited for up to
    ``connect_seconds``."""

    def __init__(self, address: str, *, connect_seconds: float) -> None:
        self.address = address
        self._connect_seconds = connect_seconds
        self._link: _Link | None = None
        self._linking: asyncio.Task[_Link] | None = None
        self._ids = itertools.count()

    async def ask(self, job: Write | WriteTogether) -> Any:
        link = await self._linked()
        answer: asyncio.Future[Any] = link.loop.create_future()
        asked = next(self._ids)
        link.waiting[asked] = answer
        # Answered, or given up on (its deadline): no longer waited for.
        answer.add_done_callback(lambda _: link.waiting.pop(asked, None))
        link.outbox.put((asked, job))
        return await answer

    def close(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            link.outbox.put(None)  # the line ends once what waits is sent

    async def _linked(self) -> _Link:
        link = self._link
        if link is not None and not link.broken:
            return link
        if self._linking is None or self._linking.done():
            self._linking = asyncio.ensure_future(self._open())
        # Shielded: a request that gives up must not cancel the connection the others await.
        return await asyncio.shield(self._linking)

    async def _open(self) -> _Link:
        loop = asyncio.get_running_loop()
        try:
            connection = await loop.run_in_executor(None, self._connect)
        except OSError as exc:
            raise DatabaseUnavailableError(
                f"the server's writer does not answer at {self.address}: {exc.strerror or exc}"
            ) from None
        link = self._link = _Link(connection, loop)
        for target, name in ((self._send, "send"), (self._receive, "receive")):
            threading.Thread(
                target=target, args=(link,), name=f"pharaon-writer-{name}", daemon=True
            ).start()
        return link

    def _connect(self) -> Connection:
        """A connection to the writer, waiting for it while it starts (its socket not yet
        there, or not yet listened on)."""
        deadline = time.monotonic() + self._connect_seconds
        while True:
            try:
                return Client(self.address, family="AF_UNIX")
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(CONNECT_PAUSE)

    def _send(self, link: _Link) -> None:
        """The sender's thread: what is queued goes in one message, until the line closes."""
        while (first := link.outbox.get()) is not None:
            jobs, stop = drained(link.outbox, first, MAX_SENT)
            try:
                link.connection.send(jobs)
            except OSError:  # the writer is gone: the receiver answers what waits
                return
            except Exception:  # a job that cannot be sent (a bug): each one alone
                for job in jobs:
                    self._send_alone(link, job)
            if stop:
                break
        # Done sending: the writer reads the end of the line, answers what it has and closes
        # its side; the receiver then reads the end and closes the connection. Closing it here
        # would pull the socket from under the receiver's read.
        with suppress(OSError), socket.socket(fileno=os.dup(link.connection.fileno())) as sock:
            sock.shutdown(socket.SHUT_WR)

    def _send_alone(self, link: _Link, job: tuple[int, Write | WriteTogether]) -> None:
        try:
            link.connection.send([job])
        except OSError:
            return
        except Exception as exc:
            _notify(link, _settle, [(job[0], exc)])

    def _receive(self, link: _Link) -> None:
        """The receiver's thread: the writer's answers to the event loop, until the line
        breaks; then every request still waiting on it is answered 503."""
        while True:
            try:
                answers = link.connection.recv()
            except (EOFError, OSError):
                break
            except Exception:  # an answer that cannot be read: the line is no longer sure
                _log.exception("an answer from the server's writer could not be read")
                break
            _notify(link, _settle, answers)
        link.connection.close()
        _notify(link, _broken)


def _notify(link: _Link, fn: Any, *args: Any) -> None:
    with suppress(RuntimeError):  # the loop is closed: nobody waits any more
        link.loop.call_soon_threadsafe(fn, link, *args)


def _settle(link: _Link, answers: list[tuple[int, Any]]) -> None:
    for asked, outcome in answers:
        answer = link.waiting.pop(asked, None)
        if answer is None or answer.done():  # its asker gave up meanwhile
            continue
        if isinstance(outcome, BaseException):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)


def _broken(link: _Link) -> None:
    link.broken = True
    link.outbox.put(None)
    waiting = list(link.waiting.values())
    link.waiting.clear()
    for answer in waiting:
        if not answer.done():
            answer.set_exception(
                DatabaseUnavailableError("the server's writer went away: the outcome is unknown")
            )


# The writer's side.


@dataclass(frozen=True, slots=True)
class _Asked:
    """A worker's request at the writer's doors: its id on the line, and until when (the
    writer's clock) it is still waited for."""

    id: int
    until: float

    def done(self) -> bool:
        return time.monotonic() > self.until


class _Replies:
    """The answers to the requests of one line (sent from the doors' threads)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Close the line once no door thread sends on it (the worker closed its side)."""
        with self._lock:
            self._closed = True
            self._connection.close()

    def send(self, answers: list[tuple[Any, Any]]) -> None:
        message = [(asked.id, _portable(outcome)) for asked, outcome in answers]
        with self._lock:
            if self._closed:  # the worker closed its line: nobody waits for these
                return
            try:
                self._connection.send(message)
            except OSError:  # the worker is gone: nobody waits for these
                return
            except Exception:  # an outcome that cannot be sent: each alone, or its error
                for asked, outcome in message:
                    self._send_alone(asked, outcome)

    def _send_alone(self, asked: int, outcome: Any) -> None:
        try:
            self._connection.send([(asked, outcome)])
        except OSError:
            return
        except Exception as exc:
            what = RuntimeError(f"the writer's answer could not be sent ({exc}): {outcome!r}")
            self._connection.send([(asked, what)])


def _portable(outcome: Any) -> Any:
    """``outcome``, a bug's exception carrying its traceback in the writer as a note (the
    worker logs it with its 500)."""
    if isinstance(outcome, Exception) and not isinstance(outcome, _KNOWN):
        outcome.add_note(
            "in the server's writer:\n" + "".join(traceback.format_tb(outcome.__traceback__))
        )
    return outcome


def run(address: str, control: Connection) -> None:
    """The writer process: listen at ``address`` and serve the workers' writes until told
    ``stop`` on ``control`` (after the workers have stopped); tell ``ready`` there once
    listening, or the one line that says why it cannot start. If its server dies, it stops at
    once: what is under way is rolled back by the database."""
    # Stopped by its server once the workers have answered their last requests.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    _name_process(NAME)
    from pydantic import ValidationError
    from uvicorn.config import LOGGING_CONFIG

    from pharaon.service import passwords
    from pharaon.settings import Settings, refused
    from pharaon.store.engine import make_engine
    from pharaon.web.database import WRITE_TOGETHER, Database
    from pharaon.web.jsonlog import log_config
    from pharaon.web.observe import Metrics

    logging.config.dictConfig(log_config(LOGGING_CONFIG))
    try:
        settings = Settings()
    except ValidationError as exc:
        control.send(f"the writer cannot start: {refused(exc)}")
        return
    try:
        engine = make_engine(
            settings.database_url, pool_size=settings.writers + WRITE_TOGETHER, create=False
        )
        Path(address).unlink(missing_ok=True)  # a writer killed before leaves its socket
        listener = Listener(address, family="AF_UNIX")
    except (OSError, ValueError) as exc:
        control.send(f"the writer cannot start: {str(exc).splitlines()[0]}")
        return
    passwords.use(settings.password_hashing)
    db = Database(
        engine,
        readers=1,
        writers=settings.writers,
        deadline=settings.db_deadline_seconds,
        slow_deadline=settings.db_slow_deadline_seconds,
        on_batch=Metrics().batch,
    )
    threading.Thread(
        target=_accept, args=(listener, db), name="pharaon-writer-accept", daemon=True
    ).start()
    control.send(READY)
    try:
        control.recv()
    except EOFError:  # the server died: what is under way is the database's to roll back
        _log.warning("the server is gone: its writer (pid %d) stops at once", os.getpid())
        os._exit(1)
    listener.close()
    db.close()
    engine.dispose()


def _name_process(name: str) -> None:
    """Name this process ``name`` where ps and top look (Linux's ``PR_SET_NAME``), so that an
    operator tells the writer from the workers, started the same way by multiprocessing."""
    with suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def _accept(listener: Listener, db: Any) -> None:
    while True:
        try:
            connection = listener.accept()
        except OSError:  # closed: the writer stops
            return
        threading.Thread(
            target=_serve_line, args=(connection, db), name="pharaon-writer-line", daemon=True
        ).start()


def _serve_line(connection: Connection, db: Any) -> None:
    """A worker's line: its jobs to the doors, until it closes."""
    replies = _Replies(connection)
    while True:
        try:
            jobs: list[tuple[int, Write | WriteTogether]] = connection.recv()
        except (EOFError, OSError):
            break
        except Exception:  # a message that cannot be read: its requests get their 503
            _log.exception("a worker's message to the writer could not be read")
            break
        now = time.monotonic()
        for asked, job in jobs:
            if isinstance(job, Write):
                seconds = db.slow_deadline if job.slow else db.deadline
                until = math.inf if seconds is None else now + seconds
                db.put_write(job.fn, job.kwargs, job.slow, _Asked(asked, until), replies)
            else:
                until = math.inf if db.deadline is None else now + db.deadline
                db.put_together(job.fn, job.request, _Asked(asked, until), replies)
    replies.close()
