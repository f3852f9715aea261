"""The HTTP API through FastAPI's TestClient, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, event, select, update
from sqlalchemy.orm import Session
from sqlalchemy.pool import Pool

from pharaon.game.board import TETROMINOES
from pharaon.game.evaluate import evaluate
from pharaon.game.rules import rules
from pharaon.game.unit import parse_ticket
from pharaon.service.audit import run_audit
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Account, IdempotencyKey, UnitRow
from pharaon.web.app import create_app
from pharaon.web.database import READ_TOGETHER, WRITE_TOGETHER, Database
from tests.conftest import BlockLoader, Player
from tests.web.live import MODERATORS


def _audit_ok(engine: Engine) -> None:
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures


def _at_origin(cells: frozenset[tuple[int, int]]) -> frozenset[tuple[int, int]]:
    top, left = min(r for r, _ in cells), min(c for _, c in cells)
    return frozenset((r - top, c - left) for r, c in cells)


def test_register_log_in_and_me(client: TestClient) -> None:
    player = Player(client, "ana@example.org", moderators=False)
    me = player.get("/me")
    assert me.status_code == 200
    identity = me.json().pop("identity")
    # Provisional from its opening, with the days left to have it verified (docs/rules.md §7).
    assert (identity["state"], identity["days_left"], identity["verified_at"]) == (
        "provisional",
        30,
        None,
    )
    assert {k: v for k, v in me.json().items() if k != "identity"} == {
        "email": "ana@example.org",
        "balance_cents": 0,
        "limits": {
            "daily_cents": None,
            "weekly_cents": None,
            "monthly_cents": None,
            "loss_weekly_cents": None,
            "stake_daily_cents": None,
            "stake_weekly_cents": None,
            "stake_monthly_cents": None,
            "moderators_set": False,  # deposits and purchases wait for them
            "pending": [],
        },
        "self_excluded_until": None,
        "pause_kind": None,
        "reality_check_minutes": None,
        "suspended": False,
        "suspended_until": None,
    }


def test_a_write_is_answered_only_once_committed(client: TestClient, player: Player) -> None:
    """The writer commits before the answer leaves: a commit that fails is answered 500, never
    201, and keeps nothing."""
    quiet = TestClient(client.app, raise_server_exceptions=False)

    def refuse(session: Session) -> None:
        # The deposit's commit only (it holds its key): not another write of the moment,
        # such as the session's refresh that a slow run's request may make first.
        mine = select(IdempotencyKey.id).where(IdempotencyKey.key == "k")
        if session.execute(mine).first() is not None:
            raise RuntimeError("the disk is full")

    event.listen(Session, "before_commit", refuse)
    try:
        r = quiet.post(
            "/api/v1/deposits",
            json={"amount_cents": 500},
            headers={**player.headers, "Idempotency-Key": "k"},
        )
    finally:
        event.remove(Session, "before_commit", refuse)
    assert (r.status_code, r.json()["error"]) == (500, "internal_error")
    assert player.balance() == 0
    assert player.deposit(500) == 500


def test_reads_go_beside_a_write_in_progress(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    """The read routes show the last commit while a writer holds its transaction open: they do
    not wait for it (on SQLite, for the one writer's lock; on PostgreSQL, for the rows' locks)."""
    load(100)
    assert player.deposit(700) == 700
    play_id = player.play(100).json()["play_id"]
    paths = ("/me", "/plays", f"/plays/{play_id}", "/prizes/remaining")
    before = {path: player.get(path).json() for path in paths}
    with make_sessionmaker(engine)() as session:
        session.execute(
            update(Account)
            .where(Account.kind == "player")
            .values(balance_cents=Account.balance_cents + 1)
        )
        for path in paths:
            r = player.get(path)
            assert (r.status_code, r.json()) == (200, before[path]), path
        session.rollback()


def test_registration_refusals(client: TestClient, player: Player) -> None:
    body = {"email": "kid@example.org", "password": "long enough", "birth_date": "2015-01-01"}
    r = client.post("/api/v1/players", json=body)
    assert (r.status_code, r.json()["error"]) == (403, "underage")
    body = {"email": "ANA@example.org", "password": "long enough", "birth_date": "1980-01-01"}
    r = client.post("/api/v1/players", json=body)
    assert (r.status_code, r.json()["error"]) == (409, "email_taken")
    for bad in (
        {"email": "not-an-email", "password": "long enough", "birth_date": "1980-01-01"},
        {"email": "x@example.org", "password": "short", "birth_date": "1980-01-01"},
        {"email": "x@example.org", "password": "long enough", "birth_date": "1980-13-01"},
        {"email": "x@example.org", "password": "long enough", "birth_date": "2999-01-01"},
        {"email": "x@example.org", "password": "long enough"},
        {"email": 5, "password": "long enough", "birth_date": "1980-01-01"},
    ):
        r = client.post("/api/v1/players", json=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["error"] == "validation_error"
        assert r.json()["detail"]


def test_auto_play_is_finished_and_exact(engine: Engine, load: BlockLoader, player: Player) -> None:
    load(100)
    assert player.deposit(1_000) == 1_000
    r = player.play(100, "auto")
    assert r.status_code == 201, r.text
    play = r.json()
    assert play["finished"] is True
    assert play["serial"] == 1
    assert all(g is not None and len(g) == 16 for g in play["grids"])
    assert play["ticket"] == "-".join(play["grids"])
    result = evaluate(parse_ticket(play["ticket"]), 100)
    assert play["prize_cents"] == result.prize_cents
    assert len(play["combinations"]) == len(result.combinations)
    assert play["balance_before_cents"] == 1_000
    assert play["balance_after_cents"] == 1_000 - 100 + play["prize_cents"]
    assert player.balance() == play["balance_after_cents"]
    with make_sessionmaker(engine)() as session:
        cells = session.execute(
            select(UnitRow.cells).where(UnitRow.block_id == play["block_id"], UnitRow.serial == 1)
        ).scalar_one()
    assert parse_ticket(play["ticket"]).cells == tuple(np.frombuffer(cells, dtype=np.int8))
    _audit_ok(engine)


def test_jouer_uncovers_grid_by_grid(engine: Engine, load: BlockLoader, player: Player) -> None:
    load(200)
    player.deposit(500)
    play = player.play(200, "jouer").json()
    assert play["grids"] == [None] * 4
    hidden = ("bonus", "combinations", "prize_cents", "ticket", "balance_after_cents")
    assert all(play[k] is None for k in hidden)
    assert play["finished"] is False
    pid = play["play_id"]
    for n, grid in enumerate((3, 1, 1, 4), start=1):
        r = player.post(f"/plays/{pid}/reveal", {"grid": grid})
        assert r.status_code == 200, r.text
        seen = r.json()
        assert seen["grids"][grid - 1] is not None
        assert not seen["finished"]
        assert all(seen[k] is None for k in hidden), n
    assert player.get(f"/plays/{pid}").json()["grids"][1] is None  # stored, survives reloads
    done = player.post(f"/plays/{pid}/reveal", {"grid": 2}).json()
    assert done["finished"] is True
    assert len(done["bonus"]) == 16
    assert done["prize_cents"] == evaluate(parse_ticket(done["ticket"]), 200).prize_cents
    assert done["balance_after_cents"] == 500 - 200 + done["prize_cents"]
    assert player.get(f"/plays/{pid}").json() == done
    _audit_ok(engine)


def test_plays_are_private(load: BlockLoader, player: Player, other: Player) -> None:
    load(100)
    player.deposit(100)
    pid = player.play(100, "jouer").json()["play_id"]
    assert other.get(f"/plays/{pid}").status_code == 404
    r = other.post(f"/plays/{pid}/reveal", {"grid": 1})
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = other.post(f"/plays/{pid}/reveal", {"grids": [1, 2, 3, 4]})
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = other.get(f"/plays/{pid}/grids/1")
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    assert other.get("/plays").json() == {"plays": [], "next_before": None}
    assert player.get("/plays/999999").status_code == 404


def test_insufficient_funds_changes_nothing(
    engine: Engine, load: BlockLoader, player: Player
) -> None:
    load(300)
    player.deposit(299)
    r = player.play(300)
    assert (r.status_code, r.json()["error"]) == (402, "insufficient_funds")
    assert player.balance() == 299
    assert player.get("/plays").json()["plays"] == []
    player.deposit(1)
    assert player.play(300).json()["serial"] == 1  # the unit was not skipped
    _audit_ok(engine)


def test_sold_out_then_next_block(engine: Engine, load: BlockLoader, player: Player) -> None:
    first = load(100, size=16, number=1)
    second = load(100, size=16, number=2)
    player.deposit(10_000)
    serials = []
    for _ in range(32):
        play = player.play(100).json()
        serials.append((play["block_id"], play["serial"]))
    assert serials == [(first, s) for s in range(1, 17)] + [(second, s) for s in range(1, 17)]
    before = player.balance()
    r = player.play(100)
    assert (r.status_code, r.json()["error"]) == (503, "sold_out")
    assert player.balance() == before
    r = player.play(200)
    assert (r.status_code, r.json()["error"]) == (503, "sold_out")
    assert player.get("/prizes/remaining", stake_cents=100).json() == []
    _audit_ok(engine)


def test_purchase_idempotency(engine: Engine, load: BlockLoader, player: Player) -> None:
    load(100)
    player.deposit(1_000)
    first = player.play(100, "jouer", key="k-1")
    again = player.play(100, "jouer", key="k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    lot = _lot(player, first)  # uncovered first: the lot counts from the fourth grid on
    assert player.balance() == first.json()["balance_before_cents"] - 100 + lot
    r = player.play(200, "jouer", key="k-1")
    assert (r.status_code, r.json()["error"]) == (409, "idempotency_conflict")
    r = player.post("/plays", {"stake_cents": 100, "mode": "auto"})
    assert (r.status_code, r.json()["error"]) == (400, "bad_request")
    assert len(player.get("/plays").json()["plays"]) == 1
    _audit_ok(engine)


def _lot(player: Player, answer: object) -> int:
    pid = answer.json()["play_id"]  # type: ignore[attr-defined]
    for grid in (1, 2, 3, 4):
        last = player.post(f"/plays/{pid}/reveal", {"grid": grid}).json()
    return int(last["prize_cents"])


def test_deposit_idempotency(engine: Engine, player: Player) -> None:
    r1 = player.post("/deposits", {"amount_cents": 700}, key="d-1")
    r2 = player.post("/deposits", {"amount_cents": 700}, key="d-1")
    assert r1.status_code == r2.status_code == 201
    assert r1.json() == r2.json() == {"deposit_id": 1, "amount_cents": 700, "balance_cents": 700}
    r3 = player.post("/deposits", {"amount_cents": 800}, key="d-1")
    assert (r3.status_code, r3.json()["error"]) == (409, "idempotency_conflict")
    r4 = player.post("/deposits", {"amount_cents": 800})
    assert (r4.status_code, r4.json()["error"]) == (400, "bad_request")
    assert player.balance() == 700
    _audit_ok(engine)


def test_history_pages_newest_first(load: BlockLoader, player: Player) -> None:
    load(100)
    player.deposit(2_000)
    ids = [player.play(100).json()["play_id"] for _ in range(5)]
    page = player.get("/plays", limit=2).json()
    assert [p["play_id"] for p in page["plays"]] == ids[::-1][:2]
    page2 = player.get("/plays", limit=2, before=page["next_before"]).json()
    assert [p["play_id"] for p in page2["plays"]] == ids[::-1][2:4]
    page3 = player.get("/plays", limit=2, before=page2["next_before"]).json()
    assert [p["play_id"] for p in page3["plays"]] == ids[:1]
    assert page3["next_before"] is None
    for bad in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"before": 0}):
        r = player.get("/plays", **bad)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), bad


def test_remaining_prizes_count_down(load: BlockLoader, player: Player) -> None:
    load(100, size=200)
    start = player.get("/prizes/remaining", stake_cents=100).json()
    assert [p["prize_cents"] for p in start] == sorted(
        (p["prize_cents"] for p in start), reverse=True
    )
    total = sum(p["remaining"] for p in start)
    player.deposit(5_000)
    won = sum(1 for _ in range(20) if player.play(100).json()["prize_cents"] > 0)
    after = player.get("/prizes/remaining", stake_cents=100).json()
    assert sum(p["remaining"] for p in after) == total - won
    r = player.get("/prizes/remaining", stake_cents=150)
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")


def test_remaining_prizes_at_each_price_and_by_default_at_the_first(
    client: TestClient, load: BlockLoader
) -> None:
    prices = rules().prices_cents
    for price in prices:
        load(price)
    first = client.get("/api/v1/prizes/remaining")  # no stake: the rules' first price
    assert first.status_code == 200
    assert first.json()
    for price in prices:
        r = client.get("/api/v1/prizes/remaining", params={"stake_cents": price})
        assert r.status_code == 200
        # The same test design at every price: the same counts, the lots times the stake.
        assert r.json() == [
            {"prize_cents": p["prize_cents"] * price // prices[0], "remaining": p["remaining"]}
            for p in first.json()
        ]


def test_a_stake_not_on_sale_is_refused_before_the_database(
    client: TestClient, tmp_path: Path
) -> None:
    """Bad input, told so even while the database is away: a 503 would have the client try
    again a request that can never be answered."""
    app = client.app
    kept = app.state.database  # type: ignore[attr-defined]
    away = create_engine(f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")
    app.state.database = Database(away, readers=1, writers=1)  # type: ignore[attr-defined]
    try:
        for stake in (0, 150, 250, max(rules().prices_cents) + 100):
            r = client.get("/api/v1/prizes/remaining", params={"stake_cents": stake})
            assert r.status_code == 422, (stake, r.text)
            assert r.json()["error"] == "validation_error"
            assert f"got {stake}" in r.json()["detail"]
        # A stake on sale does go to the database, away here.
        r = client.get("/api/v1/prizes/remaining", params={"stake_cents": rules().prices_cents[0]})
        assert (r.status_code, r.json()["error"]) == (503, "unavailable")
    finally:
        away.dispose()
        app.state.database = kept  # type: ignore[attr-defined]


def test_rules_health_and_page(client: TestClient) -> None:
    rules = client.get("/api/v1/rules").json()
    assert [s["code"] for s in rules["symbols"]] == list("PYOXJS")
    assert rules["prices_cents"] == [100, 200, 300]
    assert sum(p["lots"] for p in rules["prizes"]) == 255_505
    assert rules["block_size"] == 1_000_000  # 1 chance in 3.91 of a lot
    # The board's centre, row by row: grid 1's bottom right, grid 2's bottom left, then the
    # top of grids 3 and 4 (docs/rules.md).
    assert rules["bonus_cells"][:4] == [[1, 3, 3], [1, 3, 4], [2, 3, 1], [2, 3, 2]]
    assert rules["bonus_cells"][12:] == [[3, 2, 3], [3, 2, 4], [4, 2, 1], [4, 2, 2]]
    assert len({tuple(cell) for cell in rules["bonus_cells"]}) == 16
    # The bonus's winning shapes, drawn in the rules: the seven tetrominoes, four cells in
    # contact each, and every way the evaluator places a winning group is one of them turned.
    shapes = {s["name"]: {(r - 1, c - 1) for r, c in s["cells"]} for s in rules["bonus_shapes"]}
    assert sorted(shapes) == ["I", "J", "L", "O", "S", "T", "Z"]
    for cells in shapes.values():
        assert len(cells) == 4
        assert all(any(abs(r - q) + abs(c - d) == 1 for q, d in cells) for r, c in cells)
    for placement in TETROMINOES:
        placed = {(p // 4, p % 4) for p in placement.positions}
        turns = []
        shape = frozenset(shapes[placement.shape])
        for _ in range(4):
            shape = _at_origin(frozenset((c, -r) for r, c in shape))
            turns.append(shape)
        assert _at_origin(frozenset(placed)) in turns, placement
    assert client.get("/api/v1/health").json() == {"status": "ok"}
    assert client.get("/api/v1/openapi.json").status_code == 200
    r = client.get("/api/v1/nowhere")
    assert (r.status_code, r.json()["error"]) == (404, "not_found")


def test_the_stakes_offered_by_the_api_page_are_the_rules_prices(client: TestClient) -> None:
    page = client.get("/api/v1/openapi.json").json()
    schemas = page["components"]["schemas"]
    assert schemas["PlayIn"]["properties"]["stake_cents"]["enum"] == [100, 200, 300]
    (stake,) = page["paths"]["/api/v1/prizes/remaining"]["get"]["parameters"]
    assert stake["name"] == "stake_cents"
    assert stake["schema"]["enum"] == list(rules().prices_cents)
    assert stake["schema"]["default"] == rules().prices_cents[0]
    assert schemas["Mode"]["enum"] == ["jouer", "auto"]


def test_the_api_page_documents_every_route_of_the_issue(client: TestClient) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    for path, method in [
        ("/api/v1/players", "post"),
        ("/api/v1/sessions", "post"),
        ("/api/v1/sessions/current", "delete"),
        ("/api/v1/me", "get"),
        ("/api/v1/deposits", "post"),
        ("/api/v1/plays", "post"),
        ("/api/v1/plays/{play_id}/reveal", "post"),
        ("/api/v1/plays/{play_id}/grids/{grid}", "get"),
        ("/api/v1/plays/{play_id}", "get"),
        ("/api/v1/plays", "get"),
        ("/api/v1/prizes/remaining", "get"),
    ]:
        assert method in paths[path], (method, path)
    # The purchase reads its header itself; its page says so as the deposit's does.
    for path in ("/api/v1/plays", "/api/v1/deposits"):
        headers = [p["name"] for p in paths[path]["post"]["parameters"] if p["in"] == "header"]
        assert headers == ["Idempotency-Key"], path
    body = paths["/api/v1/plays"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/PlayIn"}


def test_cookie_sessions_need_csrf(client: TestClient, load: BlockLoader) -> None:
    body = {"email": "cookie@example.org", "password": "long enough", "birth_date": "1970-01-01"}
    assert client.post("/api/v1/players", json=body).status_code == 201
    r = client.post("/api/v1/sessions", json={"email": body["email"], "password": body["password"]})
    csrf = r.json()["csrf_token"]
    cookies = r.headers.get_list("set-cookie")
    session_cookie = next(c for c in cookies if c.startswith("pharaon_session="))
    assert "HttpOnly" in session_cookie
    assert "SameSite=strict" in session_cookie
    csrf_cookie = next(c for c in cookies if c.startswith("pharaon_csrf="))
    assert "HttpOnly" not in csrf_cookie
    assert client.get("/api/v1/me").status_code == 200  # reading needs no CSRF header
    r = client.post(
        "/api/v1/deposits", json={"amount_cents": 100}, headers={"Idempotency-Key": "a"}
    )
    assert (r.status_code, r.json()["error"]) == (403, "csrf")
    r = client.post(
        "/api/v1/deposits",
        json={"amount_cents": 100},
        headers={"Idempotency-Key": "a", "X-CSRF-Token": "wrong"},
    )
    assert (r.status_code, r.json()["error"]) == (403, "csrf")
    assert client.put("/api/v1/me/limits", json=MODERATORS).status_code == 403  # a change too
    r = client.put("/api/v1/me/limits", json=MODERATORS, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200, r.text
    r = client.post(
        "/api/v1/deposits",
        json={"amount_cents": 100},
        headers={"Idempotency-Key": "a", "X-CSRF-Token": csrf},
    )
    assert r.status_code == 201
    load(100)
    buy = {"stake_cents": 100, "mode": "auto"}
    r = client.post("/api/v1/plays", json=buy, headers={"Idempotency-Key": "p"})
    assert (r.status_code, r.json()["error"]) == (403, "csrf")
    r = client.post(
        "/api/v1/plays", json=buy, headers={"Idempotency-Key": "p", "X-CSRF-Token": csrf}
    )
    assert r.status_code == 201
    assert client.get("/api/v1/me").json()["balance_cents"] == 100 - 100 + r.json()["prize_cents"]
    assert client.delete("/api/v1/sessions/current").status_code == 403
    assert (
        client.delete("/api/v1/sessions/current", headers={"X-CSRF-Token": csrf}).status_code == 204
    )
    assert client.get("/api/v1/me").status_code == 401


def test_log_out_ends_the_bearer_session(client: TestClient, player: Player) -> None:
    r = client.delete("/api/v1/sessions/current", headers=player.headers)
    assert r.status_code == 204
    r = player.get("/me")
    assert (r.status_code, r.json()["error"]) == (401, "unauthorized")
    for headers in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer nope"}):
        r = client.get("/api/v1/me", headers=headers)
        assert (r.status_code, r.json()["error"]) == (401, "unauthorized"), headers


def test_the_routes_threads_hold_no_more_connections_than_the_pool(
    engine: Engine, settings: Settings
) -> None:
    """The database's doors hold a connection per thread: however many requests come at once,
    the connections held never pass the pool, so none is opened and closed per request."""
    small = settings.model_copy(update={"readers": 2, "writers": 1})
    lock = threading.Lock()
    held = most = 0

    def checked_out(*_: object) -> None:
        nonlocal held, most
        with lock:
            held += 1
            most = max(most, held)

    def checked_in(*_: object) -> None:
        nonlocal held
        with lock:
            held -= 1

    # Every pool: the writers' (the engine's) and the readers' (one of their own).
    event.listen(Pool, "checkout", checked_out)
    event.listen(Pool, "checkin", checked_in)
    try:
        with TestClient(create_app(small, engine=engine)) as client:
            player = Player(client, "many@example.org")
            most = 0
            with ThreadPoolExecutor(16) as pool:
                codes = list(pool.map(lambda _: player.get("/plays").status_code, range(64)))
    finally:
        event.remove(Pool, "checkout", checked_out)
        event.remove(Pool, "checkin", checked_in)
    assert codes == [200] * 64
    assert 1 <= most <= small.readers + READ_TOGETHER + small.writers + WRITE_TOGETHER
