"""A player's limits hold when a burst of purchases or deposits is split over two servers on
one PostgreSQL (two application instances, two engines, as two servers behind a proxy): every
stake limit, the loss limit, a lowered limit with its raise pending, the deposit limits. Each
sale locks the buyers' accounts, then counts their windows in a statement of its own
(service/sales.py), so a batch of one server that waited for the other's sees what that one
sold.

Each burst is checked against an oracle written here, over the player's plays in the order
their sales took the account's lock (play ids): what the sale must have seen when it decided.
"""

from __future__ import annotations

import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from pharaon.service.audit import run_audit
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Deposit, PlayRow
from pharaon.web.app import create_app
from tests.conftest import BlockLoader, Player, postgres_schema

pytestmark = pytest.mark.postgres


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """PostgreSQL only: SQLite has one writer (a server on it is one process)."""
    base: str = request.getfixturevalue("postgres_database")
    yield from postgres_schema(base)


@pytest.fixture
def servers(engine: Engine, settings: Settings, load: BlockLoader) -> Iterator[list[TestClient]]:
    """Two application instances on the migrated database, each with its own engine and its
    own writer; a block on sale at each price."""
    for price in (100, 200, 300):
        load(price_cents=price, size=200)
    first, second = TestClient(create_app(settings)), TestClient(create_app(settings))
    with first, second:
        yield [first, second]


_emails = iter(f"p{n}@example.org" for n in range(10**6))


def _player(servers: list[TestClient], limits: dict[str, Any], deposit: int) -> Player:
    player = Player(servers[0], next(_emails))
    r = player.put("/me/limits", {"daily_cents": None, "monthly_cents": None, **limits})
    assert r.status_code == 200, r.text
    player.deposit(deposit)
    return player


def _burst(
    servers: list[TestClient], player: Player, orders: list[tuple[int, str]]
) -> Counter[str]:
    """Each order (stake, mode) sent at the same moment, alternately to each server; the
    answers' codes (``sold`` or the error)."""
    barrier = threading.Barrier(len(orders))

    def one(n: int) -> str:
        stake, mode = orders[n]
        client = servers[n % len(servers)]
        headers = {**player.headers, "Idempotency-Key": secrets.token_hex(8)}
        barrier.wait(30)
        r = client.post("/api/v1/plays", json={"stake_cents": stake, "mode": mode}, headers=headers)
        assert r.status_code in (200, 201, 403), r.text
        return "sold" if r.status_code < 300 else str(r.json()["error"])

    with ThreadPoolExecutor(len(orders)) as pool:
        return Counter(pool.map(one, range(len(orders))))


def _plays(engine: Engine, player: Player) -> list[tuple[int, int, str, int]]:
    """The player's plays in the order of their sales: (stake, lot, mode, revealed)."""
    with engine.connect() as conn:
        return [
            (int(stake), int(lot), str(mode), int(revealed))
            for stake, lot, mode, revealed in conn.execute(
                select(PlayRow.stake_cents, PlayRow.prize_cents, PlayRow.mode, PlayRow.revealed)
                .where(PlayRow.player_id == player.player_id)
                .order_by(PlayRow.id)
            )
        ]


def _audited(engine: Engine) -> None:
    """``pharaon audit``'s check of the limits (service/limits_audit.py) finds what the oracle
    found: every sale and deposit within the limits, none a false alarm."""
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures


def _oracle(
    plays: list[tuple[int, int, str, int]], stake_limit: int | None, loss: int | None
) -> None:
    """Every sale of ``plays`` (all in one window of every limit) within the stake limit and
    the loss limit as the sale saw them: the stakes and the net loss of the plays before it
    (an auto play's lot credited, a jouer play's not yet)."""
    staked = lost = 0
    for stake, lot, mode, _ in plays:
        if stake_limit is not None:
            assert staked + stake <= stake_limit, (staked, stake, stake_limit)
        if loss is not None:
            assert lost + stake <= loss, (lost, stake, loss)
        staked += stake
        lost += stake - (lot if mode == "auto" else 0)


@pytest.mark.parametrize(
    ("period", "limit", "stake"),
    [("stake_daily", 700, 100), ("stake_weekly", 1_000, 200), ("stake_monthly", 900, 300)],
)
def test_a_stake_limit_holds_over_two_servers(
    servers: list[TestClient], engine: Engine, period: str, limit: int, stake: int
) -> None:
    moderators = {"weekly_cents": 10**9, "stake_weekly_cents": 10**9}
    player = _player(servers, {**moderators, f"{period}_cents": limit}, deposit=10_000)
    answers = _burst(servers, player, [(stake, "auto")] * 32)
    # Exactly as many as the limit allows: none more (a stale count), none fewer.
    assert answers == {"sold": limit // stake, "stake_limit": 32 - limit // stake}
    plays = _plays(engine, player)
    assert sum(p[0] for p in plays) == limit
    _oracle(plays, limit, None)
    _audited(engine)


def test_a_lowered_limit_with_its_raise_pending_holds_over_two_servers(
    servers: list[TestClient], engine: Engine
) -> None:
    player = _player(servers, {"weekly_cents": 10**9, "stake_weekly_cents": 1_000}, deposit=10_000)
    raised = player.put("/me/limits", {"weekly_cents": 10**9, "stake_weekly_cents": 5_000})
    assert raised.status_code == 200, raised.text
    assert raised.json()["stake_weekly_cents"] == 1_000  # the raise waits
    assert [p["period"] for p in raised.json()["pending"]] == ["stake_weekly"]
    answers = _burst(servers, player, [(200, "auto")] * 32)
    assert answers == {"sold": 5, "stake_limit": 27}
    _oracle(_plays(engine, player), 1_000, None)
    _audited(engine)


def test_the_loss_limit_holds_over_two_servers(servers: list[TestClient], engine: Engine) -> None:
    player = _player(
        servers,
        {"weekly_cents": 10**9, "stake_weekly_cents": 10**9, "loss_weekly_cents": 500},
        deposit=10_000,
    )
    answers = _burst(servers, player, [(300, "auto")] * 32)
    assert set(answers) <= {"sold", "loss_limit"}, answers
    plays = _plays(engine, player)
    assert answers["sold"] == len(plays) >= 1
    _oracle(plays, None, 500)
    assert sum(stake - lot for stake, lot, _, _ in plays) <= 500
    _audited(engine)


def test_deposit_limits_hold_over_two_servers(servers: list[TestClient], engine: Engine) -> None:
    player = Player(servers[0], next(_emails))
    body = {"daily_cents": 1_000, "weekly_cents": 10**9, "stake_weekly_cents": 10**9}
    assert player.put("/me/limits", body).status_code == 200
    barrier = threading.Barrier(32)

    def deposit(n: int) -> int:
        headers = {**player.headers, "Idempotency-Key": secrets.token_hex(8)}
        barrier.wait(30)
        r = servers[n % 2].post("/api/v1/deposits", json={"amount_cents": 100}, headers=headers)
        return int(r.status_code)

    with ThreadPoolExecutor(32) as pool:
        codes = Counter(pool.map(deposit, range(32)))
    assert codes == {201: 10, 403: 22}
    with engine.connect() as conn:
        deposited = conn.execute(
            select(Deposit.amount_cents).where(Deposit.player_id == player.player_id)
        ).scalars()
        assert sum(deposited) == 1_000
    _audited(engine)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    orders=st.lists(
        st.tuples(st.sampled_from([100, 200, 300]), st.sampled_from(["auto", "jouer"])),
        min_size=4,
        max_size=24,
    ),
    stake_limit=st.integers(min_value=0, max_value=3_000),
    loss=st.one_of(st.none(), st.integers(min_value=0, max_value=2_000)),
)
def test_any_burst_over_two_servers_keeps_every_sale_within_the_limits(
    servers: list[TestClient],
    engine: Engine,
    orders: list[tuple[int, str]],
    stake_limit: int,
    loss: int | None,
) -> None:
    limits: dict[str, Any] = {
        "weekly_cents": 10**9,
        "stake_weekly_cents": 10**9,
        "stake_daily_cents": stake_limit,
    }
    if loss is not None:
        limits["loss_weekly_cents"] = loss
    player = _player(servers, limits, deposit=100_000)
    answers = _burst(servers, player, orders)
    plays = _plays(engine, player)
    assert answers["sold"] == len(plays)
    _oracle(plays, stake_limit, loss)
    _audited(engine)
    # A refusal only when the order would have passed a limit: the burst sold at least the
    # cheapest stake if any limit let it.
    cheapest = min(stake for stake, _ in orders)
    if stake_limit >= cheapest and (loss is None or loss >= cheapest):
        assert plays, answers
