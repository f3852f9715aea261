"""On PostgreSQL a batch is sold by the database function ``pharaon_sell`` (migration 0002); on
SQLite by the Python steps. The same batches sold both ways, on two PostgreSQL schemas loaded
with the same blocks, must leave the same rows, and the function's audit records must pass the
Python audit (which re-hashes every record)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

from pharaon.game.modes import Mode
from pharaon.pool.blockfile import Block
from pharaon.service import limits, loading, sale_steps, sales, sell_function
from pharaon.service.audit import run_audit
from pharaon.service.errors import (
    IdempotencyConflictError,
    InsufficientFundsError,
    SelfExcludedError,
    SoldOutError,
)
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from pharaon.store.tables import Block as BlockRow
from tests.conftest import _libpq, make_block
from tests.service.helpers import funded_player

pytestmark = pytest.mark.postgres

Open = Callable[[], Session]

# The two batches' times: one with microseconds, one without (isoformat then omits them).
FIRST = datetime(2026, 12, 3, 12, 0, 0, 123456, tzinfo=UTC)
SECOND = datetime(2026, 12, 3, 12, 0, 1, tzinfo=UTC)

# What a sale writes, without the columns that the players' sign-up stamped with its clock.
TABLES = {
    "accounts": "id, kind, player_id, balance_cents",
    "ledger_transactions": "id, kind",
    "ledger_entries": "id, transaction_id, account_id, amount_cents",
    "plays": "*",
    "idempotency_keys": "id, player_id, key, request_sha256, result_id",
    "blocks": "id, state, next_serial",
    "audit_log": "seq, kind, actor, payload",
}


@pytest.fixture
def schemas(postgres_database: str) -> Iterator[Callable[[], Engine]]:
    """``new()``: an engine on a fresh, migrated PostgreSQL schema (dropped after)."""
    made: list[tuple[str, Engine]] = []

    def new() -> Engine:
        schema = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(_libpq(postgres_database), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        engine = make_engine(f"{postgres_database}?options={quote(f'-csearch_path={schema}')}")
        upgrade(engine)
        made.append((schema, engine))
        return engine

    yield new
    for schema, engine in made:
        engine.dispose()
        with psycopg.connect(_libpq(postgres_database), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _scenario(engine: Engine, blocks: list[Block]) -> tuple[list[list[str]], dict[str, Any]]:
    """Two batches with every kind of outcome; a summary of each outcome, and the rows."""
    sessions = make_sessionmaker(engine)
    with sessions.begin() as session:
        for block in blocks:
            loading.load_block(
                session=session, block=block, allow_test=True, actor="test", now=FIRST
            )
    regular = funded_player(sessions, "regular", 10_000)
    rich = [funded_player(sessions, f"p{n}", 1_000) for n in range(8)]
    poor = funded_player(sessions, "poor", 50)
    out = funded_player(sessions, "out", 1_000)
    with sessions() as session, session.begin():
        limits.self_exclude(session=session, player_id=out, days=7, now=FIRST)
    # Across the first block's end, in jouer mode: their lots wait in the pending account.
    first = [sales.Order(p, 100, Mode.JOUER, "a") for p in rich[:5]]
    first += [
        sales.Order(rich[5], 300, Mode.JOUER, "a"),
        sales.Order(poor, 100, Mode.AUTO, "a"),
        sales.Order(out, 300, Mode.AUTO, "a"),
        sales.Order(rich[6], 200, Mode.AUTO, "a"),  # no block at 2 €
    ]
    second = [
        sales.Order(rich[0], 100, Mode.JOUER, "a"),  # a retry: replays its play
        sales.Order(rich[1], 300, Mode.AUTO, "a"),  # the same key for another request
        *(sales.Order(p, 100, Mode.AUTO, "b") for p in rich[2:5]),  # the second block's last
        sales.Order(rich[7], 100, Mode.AUTO, "b"),  # sold out: refunded
    ]
    summaries = []
    for orders, now in ((first, FIRST), (second, SECOND)):
        # Before each batch, the regular player takes the first block's units but the last
        # three, then the second's but the last three (one by one: a player's orders are).
        mine = [
            sales.Order(regular, 100, Mode.AUTO, f"{now}-{n}")
            for n in range(13 if now == FIRST else 11)
        ]
        with sessions.begin() as session:
            sales.buy_many(session=session, orders=mine, now=now)
        with sessions.begin() as session:
            outcomes = sales.buy_many(session=session, orders=orders, now=now)
        summaries.append([_summary(o) for o in outcomes])
    with sessions() as session:
        report = run_audit(session=session)
        assert report.ok, report.failures
        rows = {
            table: session.execute(text(f"SELECT {columns} FROM {table} ORDER BY 1")).all()
            for table, columns in TABLES.items()
        }
        assert session.execute(select(BlockRow.state).order_by(BlockRow.id)).scalars().all() == [
            "sold_out",
            "sold_out",
            "open",
        ]
    return summaries, rows


def _lots_of(block: Block, first: int) -> int:
    """The lots of the block's ``first`` units."""
    return int(block.lots_cents[:first].sum())


def _summary(outcome: sales.Outcome) -> str:
    if isinstance(outcome, PlayView):
        return (
            f"play {outcome.play_id} block {outcome.block_id} serial {outcome.serial} "
            f"lot {outcome.prize_cents} balance {outcome.balance_before_cents}"
            f"->{outcome.balance_after_cents} finished {outcome.finished}"
        )
    return f"{type(outcome).__name__}: {outcome}"


def test_the_database_function_sells_as_the_python_steps_do(
    schemas: Callable[[], Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    first_block = make_block(100, size=16)
    while not first_block.lots_cents[13:].any():  # a lot among the jouer units sold at its end
        first_block = make_block(100, size=16)
    blocks = [first_block, make_block(100, size=16, number=2), make_block(300)]
    called = []
    in_postgres = sell_function.sell

    def counted(*args: Any) -> Any:
        called.append(True)
        return in_postgres(*args)

    monkeypatch.setattr(sell_function, "sell", counted)
    by_function = _scenario(schemas(), blocks)
    assert len(called) >= 2
    monkeypatch.setattr(sell_function, "sell", sale_steps.sell)
    by_steps = _scenario(schemas(), blocks)
    assert by_function == by_steps
    pending = [balance for id_, _, _, balance in by_function[1]["accounts"] if id_ == 0]
    # The jouer units: the first block's last three, the second's first two, the 3 € one.
    jouer_lots = int(first_block.lots_cents[13:].sum()) + _lots_of(blocks[1], 2)
    assert pending == [jouer_lots + _lots_of(blocks[2], 1)]

    first, second = by_function[0]
    assert [s.split(" ")[0] for s in first[:6]] == ["play"] * 6
    assert [s.split(" serial ")[1].split(" ")[0] for s in first[:5]] == ["14", "15", "16", "1", "2"]
    assert first[6].startswith(InsufficientFundsError.__name__)
    assert first[7].startswith(SelfExcludedError.__name__)
    assert first[8].startswith(SoldOutError.__name__)
    assert second[0] == first[0]  # the retry replays the same play
    assert second[1].startswith(IdempotencyConflictError.__name__)
    assert [s.split(" serial ")[1].split(" ")[0] for s in second[2:5]] == ["14", "15", "16"]
    assert second[5].startswith(SoldOutError.__name__)


def test_the_function_reaches_its_rows_by_index(schemas: Callable[[], Engine]) -> None:
    """Its statements' plans, kept for the connection's life once made (on the sixth call),
    must not scan a whole table that grows: idempotency keys, accounts, players, limits and
    plays (the loss check reads a player's week of plays by ix_plays_player_time)."""
    engine = schemas()
    sessions = make_sessionmaker(engine)
    with sessions.begin() as session:
        loading.load_block(
            session=session, block=make_block(100), allow_test=True, actor="test", now=FIRST
        )
    buyers = [funded_player(sessions, f"p{n}", 10_000) for n in range(3)]
    with (
        sessions() as session,
        session.begin(),
    ):  # one buyer's purchases read their week of plays (0006)
        limits.set_limits(
            session=session,
            player_id=buyers[0],
            daily_cents=None,
            weekly_cents=None,
            monthly_cents=None,
            loss_weekly_cents=1_000_000,
            now=FIRST,
        )
    plans: list[str] = []
    with sessions() as session, session.begin():
        for n in range(8):  # on one connection: the plans are made, then kept
            orders = [sales.Order(p, 100, Mode.AUTO, f"k{n}") for p in buyers]
            assert all(
                isinstance(o, sales.SoldPlay)
                for o in sales.sell_many(session=session, orders=orders, now=FIRST)
            )
        for setting in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_nested_statements = on",
            "SET auto_explain.log_level = notice",
            "SET client_min_messages = notice",
        ):
            session.execute(text(setting))
        driver = session.connection().connection.driver_connection
        assert isinstance(driver, psycopg.Connection)
        driver.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
        orders = [sales.Order(p, 100, Mode.AUTO, "last") for p in buyers]
        sales.sell_many(session=session, orders=orders, now=FIRST)
    shown = "\n".join(plans)
    for table in ("idempotency_keys", "accounts", "players", "deposit_limits", "plays"):
        assert f" on {table} " in shown  # its plans were shown
        assert f"Seq Scan on {table}" not in shown, shown
    assert "ix_plays_player_time" in shown, shown
