"""A hypothesis state machine over the player's whole life, on SQLite and PostgreSQL.

Sign-up, deposits, purchases in both modes, reveals, retries with the same Idempotency-Key
(same body: the same answer and nothing charged twice; another body: a conflict), deposit
limits and self-exclusion, in any order hypothesis finds. After every step the audit (what
``pharaon audit`` runs) is clean, money is conserved (the player, sales and prizes accounts
hold exactly what the tests deposited, the cash account its opposite) and each player's
balance is the model's.

It drives the HTTP API through the TestClient rather than the service functions: a request
then takes the whole real path -- authentication, validation, the batching desks of web/,
the sale on each database (the PL/pgSQL function on PostgreSQL), the routes' units of work --
so a step that only the assembled server gets wrong is found too. The model is independent
of the code under test: a unit's lot is evaluated from its stored cells by ``game.evaluate``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import Engine, select

from pharaon.game.evaluate import evaluate
from pharaon.game.modes import Mode
from pharaon.game.rules import rules
from pharaon.game.unit import Unit
from pharaon.service.audit import run_audit
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import CASH_ACCOUNT, Account, UnitRow
from tests.conftest import BlockLoader, Player

PRICES = tuple(rules().prices_cents)
# Small blocks; the dearest is the smallest and mostly sold before the runs, so they sell it out.
SIZES = dict.fromkeys(PRICES, 48) | {max(PRICES): 16}
PRESOLD = 14
PERIODS = ("daily", "weekly", "monthly")
GRIDS = 4
MAX_PLAYERS = 3  # per run: each sign-up hashes a password (argon2), a slow step

amounts = st.one_of(st.sampled_from([1_000, 5_000]), st.integers(min_value=1, max_value=1_500))
limit_values = st.one_of(st.none(), st.integers(min_value=0, max_value=3_000))


@dataclass
class World:
    """What outlives one run of the machine: the server, its database and the blocks."""

    engine: Engine
    client: TestClient
    sold: dict[int, int] = field(default_factory=lambda: dict.fromkeys(PRICES, 0))
    deposited_cents: int = 0
    names: itertools.count[int] = field(default_factory=itertools.count)


@dataclass
class Model:
    """What the model expects of one player."""

    api: Player
    balance_cents: int = 0
    deposited_cents: int = 0
    limits: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(PERIODS))
    pending: dict[str, int | None] = field(default_factory=dict)
    excluded: bool = False
    # key -> (route, body, answer) of each request that succeeded with it
    keys: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    key_count: itertools.count[int] = field(default_factory=itertools.count)

    def new_key(self) -> str:
        return f"k-{next(self.key_count)}"


@dataclass
class Ticket:
    """A play bought in « Jouer » mode, as the model sees it."""

    owner: Model
    play_id: int
    stake_cents: int
    lot_cents: int
    balance_before_cents: int
    revealed: set[int] = field(default_factory=set)


def _lot(engine: Engine, block_id: int, serial: int, stake_cents: int) -> int:
    """The unit's lot evaluated from its stored cells by the rules, not read from the row."""
    with make_sessionmaker(engine)() as session:
        cells = session.execute(
            select(UnitRow.cells).where(UnitRow.block_id == block_id, UnitRow.serial == serial)
        ).scalar_one()
    return evaluate(Unit(tuple(bytes(cells))), stake_cents).prize_cents


def _stable(play: dict[str, Any]) -> dict[str, Any]:
    """The fields of a play that uncovering grids does not change."""
    keep = ("play_id", "block_id", "serial", "stake_cents", "mode", "balance_before_cents")
    return {k: play[k] for k in keep}


class LifeOfPlayers(RuleBasedStateMachine):
    """Players sign up, deposit, buy, uncover, retry and limit themselves; see the module."""

    world: World  # set on a subclass by the test
    players = Bundle("players")
    tickets = Bundle("tickets")

    def __init__(self) -> None:
        super().__init__()
        self.models: list[Model] = []
        self.bought = 0

    @precondition(lambda self: len(self.models) < MAX_PLAYERS)
    @rule(target=players)
    def sign_up(self) -> Model:
        name = f"p{next(self.world.names)}@example.org"
        model = Model(Player(self.world.client, name))
        self.models.append(model)
        return model

    @rule(player=players, amount=amounts)
    def deposit(self, player: Model, amount: int) -> None:
        key = player.new_key()
        body = {"amount_cents": amount}
        r = player.api.post("/deposits", body, key=key)
        over = [
            period
            for period, limit in player.limits.items()
            if limit is not None and player.deposited_cents + amount > limit
        ]
        if player.excluded:
            assert (r.status_code, r.json()["error"]) == (403, "self_excluded"), r.text
        elif over:
            assert (r.status_code, r.json()["error"]) == (403, "deposit_limit"), (over, r.text)
        else:
            assert r.status_code == 201, r.text
            player.balance_cents += amount
            player.deposited_cents += amount
            self.world.deposited_cents += amount
            assert r.json()["amount_cents"] == amount
            assert r.json()["balance_cents"] == player.balance_cents
            player.keys[key] = ("/deposits", body, r.json())

    @rule(target=tickets, player=players, stake=st.sampled_from(PRICES), mode=st.sampled_from(Mode))
    def buy(self, player: Model, stake: int, mode: Mode) -> Any:
        key = player.new_key()
        body = {"stake_cents": stake, "mode": mode.value}
        r = player.api.post("/plays", body, key=key)
        if player.excluded:
            assert (r.status_code, r.json()["error"]) == (403, "self_excluded"), r.text
            return multiple()
        if player.balance_cents < stake:
            assert (r.status_code, r.json()["error"]) == (402, "insufficient_funds"), r.text
            return multiple()
        if self.world.sold[stake] == SIZES[stake]:
            assert (r.status_code, r.json()["error"]) == (503, "sold_out"), r.text
            return multiple()
        assert r.status_code == 201, r.text
        play = r.json()
        self.world.sold[stake] += 1
        self.bought += 1
        assert play["serial"] == self.world.sold[stake]  # units are sold in serial order
        assert (play["stake_cents"], play["mode"]) == (stake, mode.value)
        assert play["balance_before_cents"] == player.balance_cents
        lot = _lot(self.world.engine, play["block_id"], play["serial"], stake)
        before = player.balance_cents
        # A « Jouer » lot waits in the pending account until the fourth grid is uncovered.
        player.balance_cents += (lot if mode == Mode.AUTO else 0) - stake
        player.keys[key] = ("/plays", body, play)
        if mode == Mode.AUTO:
            assert play["finished"] is True
            assert play["prize_cents"] == lot
            assert play["balance_after_cents"] == player.balance_cents
            return multiple()
        assert play["finished"] is False
        assert play["grids"] == [None] * GRIDS
        assert play["prize_cents"] is None
        assert play["balance_after_cents"] is None
        return Ticket(player, play["play_id"], stake, lot, before)

    @rule(ticket=tickets, grid=st.integers(min_value=1, max_value=GRIDS))
    def reveal(self, ticket: Ticket, grid: int) -> None:
        r = ticket.owner.api.post(f"/plays/{ticket.play_id}/reveal", {"grid": grid})
        assert r.status_code == 200, r.text
        was_finished = len(ticket.revealed) == GRIDS
        ticket.revealed.add(grid)
        if len(ticket.revealed) == GRIDS and not was_finished:
            ticket.owner.balance_cents += ticket.lot_cents  # the lot, shown at last
        seen = r.json()
        shown = {n for n, g in enumerate(seen["grids"], start=1) if g is not None}
        finished = len(ticket.revealed) == GRIDS
        assert seen["finished"] is finished
        if finished:
            assert shown == set(range(1, GRIDS + 1))
            assert seen["prize_cents"] == ticket.lot_cents
            expected = ticket.balance_before_cents - ticket.stake_cents + ticket.lot_cents
            assert seen["balance_after_cents"] == expected
        else:
            assert shown == ticket.revealed
            assert seen["prize_cents"] is None
            assert seen["ticket"] is None

    @rule(ticket=tickets, stranger=players)
    def reveal_by_another(self, ticket: Ticket, stranger: Model) -> None:
        if stranger is ticket.owner:
            return
        r = stranger.api.post(f"/plays/{ticket.play_id}/reveal", {"grid": 1})
        assert (r.status_code, r.json()["error"]) == (404, "not_found"), r.text

    @precondition(lambda self: any(m.keys for m in self.models))
    @rule(data=st.data(), same_body=st.booleans())
    def retry(self, data: st.DataObject, same_body: bool) -> None:
        player = data.draw(st.sampled_from([m for m in self.models if m.keys]))
        key = data.draw(st.sampled_from(sorted(player.keys)))
        route, body, answer = player.keys[key]
        if not same_body:
            body = dict(body)
            if route == "/deposits":
                body["amount_cents"] += 1
            else:
                body["mode"] = Mode.AUTO.value if body["mode"] == Mode.JOUER else Mode.JOUER.value
        r = player.api.post(route, body, key=key)
        if not same_body:
            assert (r.status_code, r.json()["error"]) == (409, "idempotency_conflict"), r.text
        elif route == "/deposits":
            assert (r.status_code, r.json()) == (201, answer)
        else:
            assert r.status_code == 201, r.text
            assert _stable(r.json()) == _stable(answer)
        # nothing is charged or credited again: the invariants check the balances

    @rule(player=players, daily=limit_values, weekly=limit_values, monthly=limit_values)
    def set_limits(
        self, player: Model, daily: int | None, weekly: int | None, monthly: int | None
    ) -> None:
        wanted = {"daily": daily, "weekly": weekly, "monthly": monthly}
        r = player.api.put("/me/limits", {f"{p}_cents": v for p, v in wanted.items()})
        assert r.status_code == 200, r.text
        for period, new in wanted.items():
            current = player.limits[period]
            if new == current or (new is not None and (current is None or new < current)):
                player.limits[period] = new  # lowering applies at once
                player.pending.pop(period, None)
            else:
                player.pending[period] = new  # raising waits 24 hours, not reached here
        got = r.json()
        assert {p: got[f"{p}_cents"] for p in PERIODS} == player.limits
        assert {p["period"]: p["amount_cents"] for p in got["pending"]} == player.pending

    # Not before a few sales: an excluded player can do little else, and runs would end idle.
    @precondition(lambda self: self.bought >= 2)
    @rule(player=players, days=st.integers(min_value=1, max_value=30))
    def self_exclude(self, player: Model, days: int) -> None:
        r = player.api.post("/me/self-exclusion", {"days": days})
        assert r.status_code == 200, r.text
        assert r.json()["self_excluded_until"] is not None
        player.excluded = True

    @invariant()
    def audit_is_clean(self) -> None:
        with make_sessionmaker(self.world.engine)() as session:
            report = run_audit(session=session)
        assert report.ok, report.failures

    @invariant()
    def money_is_conserved(self) -> None:
        with make_sessionmaker(self.world.engine)() as session:
            rows = session.execute(
                select(Account.id, Account.player_id, Account.balance_cents)
            ).all()
        cash = sum(b for account_id, _, b in rows if account_id == CASH_ACCOUNT)
        held = sum(b for account_id, _, b in rows if account_id != CASH_ACCOUNT)
        assert held == self.world.deposited_cents
        assert cash == -self.world.deposited_cents
        by_player = {player_id: b for _, player_id, b in rows if player_id is not None}
        for model in self.models:
            assert by_player[model.api.player_id] == model.balance_cents, model.api.email


def test_any_life_keeps_the_audit_clean_and_the_money(
    engine: Engine, client: TestClient, load: BlockLoader
) -> None:
    for number, price in enumerate(PRICES, start=1):
        load(price, size=SIZES[price], number=number)
    world = World(engine, client)
    dearest = max(PRICES)
    house = Player(client, "house@example.org")
    house.deposit(PRESOLD * dearest)
    world.deposited_cents += PRESOLD * dearest
    for _ in range(PRESOLD):
        assert house.play(dearest, Mode.AUTO.value).status_code == 201
    world.sold[dearest] = PRESOLD

    class Machine(LifeOfPlayers):
        pass

    Machine.world = world
    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=10,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    assert sum(world.sold.values()) > PRESOLD, "no run bought: the strategies are too narrow"
