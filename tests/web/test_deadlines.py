"""Every request answered within its deadline (``PHARAON_DB_DEADLINE_SECONDS``), on both
databases: a purchase whose buyer's account is held by another transaction is answered 503
``unavailable`` with ``Retry-After`` once the deadline has passed, not when the lock goes; the
server answers the other requests meanwhile; once the lock goes, the retry with the same
Idempotency-Key sells the unit once. (A COMMIT waiting for a synchronous standby that is gone:
tests/web/test_sync_standby.py.)"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from pharaon.settings import Settings
from pharaon.store.tables import PlayRow
from pharaon.web.app import create_app
from tests.conftest import BlockLoader, Player, _libpq

DEADLINE = 1.0
# Each answer is timed against the deadline: with the machine to itself (Makefile, test).
pytestmark = pytest.mark.alone


@contextmanager
def _account_held(engine: Engine, player_id: int) -> Iterator[None]:
    """Another transaction holding the player's account (PostgreSQL: its row locked; SQLite:
    the write lock), until the block is left."""
    url = engine.url
    if engine.dialect.name == "sqlite":
        other = sqlite3.connect(str(url.database), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    with psycopg.connect(_libpq(url.render_as_string(hide_password=False))) as holder:
        holder.execute("SELECT id FROM accounts WHERE player_id = %s FOR UPDATE", (player_id,))
        yield
        holder.rollback()


def test_a_purchase_held_past_its_deadline_is_503_then_sold_once(
    engine: Engine, settings: Settings, load: BlockLoader
) -> None:
    load(100)
    settings = settings.model_copy(update={"db_deadline_seconds": DEADLINE})
    with TestClient(create_app(settings, engine=engine)) as client:
        player = Player(client, "ana@example.org")
        player.deposit(1_000)
        with _account_held(engine, player.player_id), ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            buying = pool.submit(player.play, 100, "auto", "held")
            # Meanwhile the server answers: the player's own reads.
            assert player.get("/me").status_code == 200
            r = buying.result(timeout=30)
            took = time.monotonic() - started
            assert r.status_code == 503, r.text
            assert r.json()["error"] == "unavailable"
            assert r.headers["Retry-After"] == "5"
            # Not before the deadline, and long before anything else would have ended the wait
            # (the account stays held until this answer): a bound in deadlines, which a loaded
            # machine does not reach.
            assert DEADLINE <= took < 3 * DEADLINE, took
        again = player.play(100, "auto", key="held")
        assert again.status_code in (200, 201), again.text
        assert player.play(100, "auto", key="held").json() == again.json()  # replayed
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(PlayRow)).scalar_one() == 1
        assert player.balance() == 1_000 - 100 + again.json()["prize_cents"]
