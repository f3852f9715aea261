"""A « Jouer » play left unfinished is finished by the server after a while (issue 27, item 5;
service/plays.finish_left), on both databases: every grid uncovered, the lot moved from the
pending account to the player, the play marked as finished by the server in what the player
sees, an audit record each; the audit's checks hold; a second pass and a second server finish
nothing twice."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import Engine, select

from pharaon.game.modes import Mode
from pharaon.service import audit, plays
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.service.wallet import balance
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.tables import PENDING_ACCOUNT, Account, AuditRecord
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player

WEEK = timedelta(days=7)


def _pending(db: Transactions) -> int:
    return int(
        db.read(
            lambda connection: connection.execute(
                select(Account.balance_cents).where(Account.id == PENDING_ACCOUNT)
            ).scalar_one()
        )
    )


def _views(db: Transactions, player_id: int) -> list[plays.PlayView]:
    found, _ = db.read(plays.history, player_id=player_id, limit=100, before=None)
    return found


def test_plays_left_a_week_are_finished_and_their_lots_credited(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 3_000)
    bought = utcnow()
    for n in range(30):
        buy(factory, [Order(ana, 100, Mode.JOUER, f"k{n}")], now=bought)
    # One the player finished: the server does not touch it.
    first = min(v.play_id for v in _views(db, ana))
    for grid in (1, 2, 3, 4):
        db.write(plays.reveal, requests=[plays.Reveal(ana, first, grid)], now=bought)
    lots = db.read(
        lambda connection: sum(
            v.prize_cents or 0
            for v in plays.history(connection=connection, player_id=ana, limit=100, before=None)[0]
        )
    )
    held = _pending(db)
    before = db.write(balance, player_id=ana)
    assert held > 0  # 30 units of a block that pays 70 %: some lots wait

    assert db.write(plays.finish_left, now=bought + WEEK - timedelta(seconds=1), after=WEEK) == 0
    assert db.write(plays.finish_left, now=bought + WEEK, after=WEEK) == 29
    assert db.write(plays.finish_left, now=bought + WEEK, after=WEEK) == 0  # once
    assert _pending(db) == 0
    assert db.write(balance, player_id=ana) == before + held
    views = _views(db, ana)
    assert all(v.finished for v in views)
    assert sum(v.prize_cents or 0 for v in views) == lots + held
    assert [v.play_id for v in views if not v.finished_by_server] == [first]
    kinds = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.kind, AuditRecord.actor).where(
                AuditRecord.kind == "play_finished_by_server"
            )
        ).all()
    )
    assert [tuple(k) for k in kinds] == [("play_finished_by_server", audit.SERVER_ACTOR)] * 29
    assert db.read(audit.run_audit).ok


def test_two_servers_finish_each_play_once(
    engine: Engine, database_url: str, load: BlockLoader
) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 3_000)
    bought = utcnow()
    for n in range(30):
        buy(factory, [Order(ana, 100, Mode.JOUER, f"k{n}")], now=bought)
    engines = [make_engine(database_url, create=False) for _ in range(2)]
    servers = [Transactions(e) for e in engines]
    barrier = threading.Barrier(2)
    counts: list[int] = []

    def finish(db: Transactions) -> None:
        barrier.wait(30)
        counts.append(db.write(plays.finish_left, now=bought + WEEK, after=WEEK, most=30))

    threads = [threading.Thread(target=finish, args=(db,)) for db in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert len(counts) == 2
        assert sum(counts) == 30, counts  # each play by one of them
        assert _pending(servers[0]) == 0
        assert servers[0].read(audit.run_audit).ok
    finally:
        for db, own in zip(servers, engines, strict=True):
            db.close()
            own.dispose()
