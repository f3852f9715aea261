"""The server's one writer (web/writer.py), a process of its own reached by its workers' lines:
it writes what they hand it, batches the requests of all its lines together, answers each
line its own, and its death or its silence is a 503 for the requests waiting, never a hang;
the supervisor starts another in its place. Through whole servers: tests/web/test_serve.py,
test_live.py and the fault tests, whose servers all have a writer."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from pharaon.service.errors import ConflictError, ServiceError
from pharaon.store.faults import DatabaseUnavailableError
from pharaon.store.tables import Player
from pharaon.web.database import Database, WriteTogether, _Door
from pharaon.web.serve import WriterProcess
from pharaon.web.writer import WriterLine
from tests.web.live import wait_until

DEADLINE = 5.0  # seconds, the writer's and the lines'


# What the writer runs for these tests: found by name in its process, as the service's are.


def players(*, session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Player)) or 0)


def refused(*, session: Session) -> ServiceError:
    """A refusal that must leave a trace: returned, committed, then raised."""
    session.execute(text("SELECT 1"))
    return ConflictError("already done")


def broken(*, session: Session) -> None:
    raise ZeroDivisionError("a bug in a write")


def together(*, session: Session, requests: Sequence[str], now: datetime) -> list[int]:
    """Each request's answer: how many were served in its batch. A request naming a file
    holds the batch until that file is there (the door stays busy meanwhile), and says it
    holds it by a file of that name and ``.held``."""
    for request in requests:
        if request.startswith("/"):
            Path(f"{request}.held").touch()
            until = time.monotonic() + 30
            while not Path(request).exists() and time.monotonic() < until:
                time.sleep(0.01)
    return [len(requests)] * len(requests)


@pytest.fixture
def writer(
    engine: Engine, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WriterProcess]:
    """A writer on the test's database, as a server starts it (its settings from the
    environment it is spawned with)."""
    monkeypatch.setenv("PHARAON_DATABASE_URL", database_url)
    monkeypatch.setenv("PHARAON_DB_DEADLINE_SECONDS", str(DEADLINE))
    process = WriterProcess(str(tmp_path / "writer.sock"))
    process.start()
    yield process
    process.stop()


def _line(writer: WriterProcess) -> WriterLine:
    return WriterLine(writer.address, connect_seconds=DEADLINE)


def _database(engine: Engine, line: WriterLine, deadline: float = DEADLINE) -> Database:
    return Database(engine, readers=1, writers=1, deadline=deadline, writer=line)


def test_a_write_is_run_by_the_writer_and_answered(engine: Engine, writer: WriterProcess) -> None:
    async def main() -> None:
        db = _database(engine, _line(writer))
        try:
            assert await db.write(players) == 0
            with pytest.raises(ConflictError, match="already done"):
                await db.write(refused)
            # A bug in the writer reaches the worker with where it happened there.
            with pytest.raises(ZeroDivisionError) as raised:
                await db.write(broken)
            notes = "".join(getattr(raised.value, "__notes__", []))
            assert "in the server's writer" in notes
            assert "in broken" in notes
        finally:
            db.close()

    asyncio.run(main())


def test_the_requests_of_all_lines_are_batched_together(
    engine: Engine, writer: WriterProcess, tmp_path: Path
) -> None:
    """Two workers' lines: what they asked while a batch was written is served in the next
    batch, one transaction for both."""
    release = tmp_path / "release"

    async def main() -> tuple[list[int], list[int]]:
        first, second = _line(writer), _line(writer)
        try:
            held = asyncio.ensure_future(first.ask(WriteTogether(together, str(release))))
            await _until(lambda: Path(f"{release}.held").exists())  # the door is busy
            mine = [first.ask(WriteTogether(together, "a")) for _ in range(5)]
            theirs = [second.ask(WriteTogether(together, "b")) for _ in range(7)]
            asked = asyncio.gather(*mine, *theirs)
            # Sent on both lines; then a while for the writer's line threads to queue them at
            # the door (a thread's wake, under the suite's load too).
            await _until(lambda: _sent(first, 1 + 5) and _sent(second, 7))
            await asyncio.sleep(1.0)
            release.touch()
            assert await held == 1
            sizes = await asked
            return sizes[:5], sizes[5:]
        finally:
            first.close()
            second.close()

    mine, theirs = asyncio.run(main())
    assert mine == [12] * 5
    assert theirs == [12] * 7


async def _until(done: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "waited 30 s"
        await asyncio.sleep(0.01)


def _sent(line: WriterLine, asked: int) -> bool:
    """Whether the ``asked`` jobs asked on ``line`` wait, none left to send to the writer."""
    link = line._link
    return link is not None and len(link.waiting) == asked and link.outbox.empty()


def test_the_writer_s_death_is_a_503_and_another_takes_its_place(
    engine: Engine, writer: WriterProcess, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    first_pid = writer.pid
    assert first_pid is not None

    async def main() -> None:
        db = _database(engine, _line(writer))
        try:
            waiting = asyncio.ensure_future(db.write_together(together, str(release)))
            await asyncio.sleep(0.5)
            began = time.monotonic()
            os.kill(first_pid, signal.SIGKILL)
            with pytest.raises(DatabaseUnavailableError, match="writer went away"):
                await waiting
            assert time.monotonic() - began < DEADLINE / 2  # at once, not at the deadline
            release.touch()
            # The next request reaches the writer started in its place, once it listens.
            await asyncio.to_thread(wait_until, lambda: writer.pid != first_pid, "a new writer")
            assert await db.write(players) == 0
        finally:
            db.close()

    asyncio.run(main())
    assert writer.pid not in (None, first_pid)


def test_a_writer_told_to_stop_ends_by_itself_and_is_reaped_once(
    engine: Engine,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Stopped, the writer ends of itself (exit code 0), seen ended by the one thread that
    waits for it: when the stop waited for it too, the loser of the two found it gone, took
    it for alive, logged "did not stop" and sent SIGKILL to a pid no longer its own."""
    monkeypatch.setenv("PHARAON_DATABASE_URL", database_url)
    for round_ in range(5):  # the race was lost about one stop in two
        process = WriterProcess(str(tmp_path / f"writer{round_}.sock"))
        process.start()
        child = process._process
        process.stop()
        assert child.exitcode == 0
    assert "did not stop" not in caplog.text


def test_a_writer_that_does_not_answer_is_a_503_at_the_deadline(
    engine: Engine, writer: WriterProcess
) -> None:
    pid = writer.pid
    assert pid is not None

    async def main() -> float:
        db = _database(engine, _line(writer), deadline=1.0)
        try:
            assert await db.write(players) == 0  # the line is up
            os.kill(pid, signal.SIGSTOP)
            # The signal is sent, not yet taken: until every thread of the writer is stopped.
            await asyncio.to_thread(wait_until, lambda: _stopped(pid), "the writer stopped", 30)
            began = time.monotonic()
            try:
                with pytest.raises(DatabaseUnavailableError, match="within 1 s"):
                    await db.write(players)
                took = time.monotonic() - began
            finally:
                os.kill(pid, signal.SIGCONT)
            assert await db.write(players) == 0  # and once it answers again
            return took
        finally:
            db.close()

    took = asyncio.run(main())
    assert 1.0 <= took < 3.0
    assert writer.pid == pid  # stopped is not dead: no other writer


def _stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (state T)."""
    tasks = Path(f"/proc/{pid}/task")
    states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks.iterdir()]
    return all(state == "T" for state in states)


def test_a_writer_not_there_is_a_503(engine: Engine, tmp_path: Path) -> None:
    line = WriterLine(str(tmp_path / "nobody.sock"), connect_seconds=0.2)

    async def main() -> None:
        db = _database(engine, line)
        try:
            with pytest.raises(DatabaseUnavailableError, match="writer does not answer"):
                await db.write(players)
        finally:
            db.close()

    asyncio.run(main())


class _Collected:
    """A line's replies, as the messages it was sent."""

    def __init__(self) -> None:
        self.messages: list[list[tuple[str, Any]]] = []

    def send(self, answers: list[tuple[Any, Any]]) -> None:
        self.messages.append([(asker.name, outcome) for asker, outcome in answers])


class _Waits:
    def __init__(self, name: str) -> None:
        self.name = name

    def done(self) -> bool:
        return False


def test_a_door_answers_each_line_its_own() -> None:
    """A batch whose jobs came from two lines sends each line the answers of its own jobs,
    in one message each."""
    go = threading.Event()

    def serve(jobs: list[int]) -> list[int]:
        if jobs == [0]:
            go.wait(10)  # the door busy: what comes meanwhile is one batch
        return [job * 10 for job in jobs]

    door: _Door[int, int] = _Door("test", serve, threads=1)
    first, second = _Collected(), _Collected()
    door.put(0, _Waits("held"), first)
    time.sleep(0.2)
    door.put(1, _Waits("a1"), first)
    door.put(3, _Waits("b"), second)
    door.put(2, _Waits("a2"), first)
    go.set()
    door.close()
    assert first.messages == [[("held", 0)], [("a1", 10), ("a2", 20)]]
    assert second.messages == [[("b", 30)]]
