"""A « Jouer » play left unfinished, finished by the server's hourly chore (web/app.py runs
``plays.finish_left``): the player's history says so, the lot is in the balance, the play's
proof can be asked for."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from pharaon.service import plays
from pharaon.service.clock import utcnow
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader, Player


def test_the_history_says_the_server_finished_it(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    player.deposit(3_000)
    bought = [player.play(mode="jouer").json() for _ in range(10)]
    assert not any(p["finished"] for p in bought)
    before = player.balance()
    db = Transactions(engine)
    try:
        week = timedelta(days=7)
        assert db.write(plays.finish_left, now=utcnow() + week, after=week) == 10
    finally:
        db.close()
    page = player.get("/plays", limit=20).json()["plays"]
    assert [p["finished_by_server"] for p in page] == [True] * 10
    assert all(p["finished"] and p["prize_cents"] is not None for p in page)
    assert player.balance() == before + sum(p["prize_cents"] for p in page)
    assert player.get(f"/plays/{page[0]['play_id']}/proof").status_code == 200
