"""Helpers shared by the service tests."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date

from sqlalchemy import Engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool

from pharaon.service import accounts, wallet
from pharaon.service.clock import utcnow
from pharaon.store.engine import writer_lock_path


def funded_player(sessions: Callable[[], Session], name: str, deposit_cents: int) -> int:
    """A new player ``name``@example.org with ``deposit_cents`` deposited; its id."""
    with sessions() as session:
        player_id = accounts.register(
            session=session,
            email=f"{name}@example.org",
            password="long enough",
            birth_date=date(1980, 1, 1),
            now=utcnow(),
        ).player_id
        if deposit_cents:
            wallet.deposit(
                session=session,
                player_id=player_id,
                amount_cents=deposit_cents,
                idempotency_key="first",
                now=utcnow(),
            )
        session.commit()
    return player_id


@contextmanager
def another_writer(engine: Engine, wait: float = 60.0) -> Iterator[Callable[[], None]]:
    """Hold the writer lock of ``engine``'s SQLite database as another process does, until the
    block is left; yields ``beginning()``, which returns once a transaction of ``engine`` is
    beginning (its connection taken from the pool, its BEGIN waiting for the lock)."""
    pool = engine.pool
    assert isinstance(pool, QueuePool)

    def beginning() -> None:
        deadline = time.monotonic() + wait
        while pool.checkedout() == 0:
            assert time.monotonic() < deadline, "no transaction began"
            time.sleep(0.01)

    other = os.open(writer_lock_path(engine.url.database or ""), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        yield beginning
    finally:
        os.close(other)  # and the lock with it
