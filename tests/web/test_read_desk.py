"""The read desk: reads that wait together run in one batch on one connection, each gets its
own answer, and a read refused with a ServiceError does not fail the others."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, func, select

from pharaon.service.errors import NotFoundError
from pharaon.store.engine import make_reader, make_sessionmaker
from pharaon.store.tables import Player
from pharaon.web.desk import ReadDesk
from tests.service.helpers import funded_player

WAIT = 60.0  # seconds: generous, the machine is shared


@pytest.fixture
def reads(engine: Engine) -> Iterator[ReadDesk]:
    funded_player(make_sessionmaker(engine), "reader", 0)
    desk = ReadDesk(make_reader(engine))
    yield desk
    desk.close()


def _players(connection: Connection) -> int:
    return int(connection.execute(select(func.count()).select_from(Player)).scalar_one())


def test_reads_waiting_together_share_a_batch_and_its_connection(reads: ReadDesk) -> None:
    opened = threading.Event()
    seen: list[Connection] = []

    def first(connection: Connection) -> str:
        assert opened.wait(WAIT)  # the desk's thread waits here while the others queue
        return "first"

    def counted(connection: Connection) -> int:
        seen.append(connection)
        return _players(connection)

    held = reads.submit(first)
    rest = [reads.submit(counted) for _ in range(3)]
    opened.set()
    assert held.result(WAIT) == "first"
    assert [f.result(WAIT) for f in rest] == [1, 1, 1]
    assert len(seen) == 3
    assert seen[0] is seen[1] is seen[2]


def test_a_refused_read_gets_its_error_and_the_others_their_answers(reads: ReadDesk) -> None:
    opened = threading.Event()

    def refused(connection: Connection) -> int:
        assert opened.wait(WAIT)
        raise NotFoundError("no such thing")

    futures = [reads.submit(refused), reads.submit(_players), reads.submit(_players)]
    opened.set()
    with pytest.raises(NotFoundError, match="no such thing"):
        futures[0].result(WAIT)
    assert [f.result(WAIT) for f in futures[1:]] == [1, 1]


def test_read_awaits_the_answer_off_the_event_loop(reads: ReadDesk) -> None:
    loop_thread: list[int] = []
    read_thread: list[int] = []

    def read(connection: Connection) -> int:
        read_thread.append(threading.get_ident())
        return _players(connection)

    async def main() -> int:
        loop_thread.append(threading.get_ident())
        return await reads.read(read)

    assert asyncio.run(main()) == 1
    assert read_thread != loop_thread
