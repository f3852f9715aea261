"""Nothing told early: a « Jouer » play's lot shows nowhere, and cannot be spent, before its
fourth grid is uncovered; on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Engine, select, update

from pharaon.service.audit import run_audit
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import PENDING_ACCOUNT, Account, PlayRow, UnitRow
from tests.conftest import BlockLoader, Player


def _winning_serial(engine: Engine, block_id: int, at_least: int) -> tuple[int, int]:
    with make_sessionmaker(engine)() as session:
        serial, lot = session.execute(
            select(UnitRow.serial, UnitRow.lot_cents)
            .where(UnitRow.block_id == block_id, UnitRow.lot_cents >= at_least)
            .order_by(UnitRow.serial)
            .limit(1)
        ).one()
    return int(serial), int(lot)


def _pending(engine: Engine) -> int:
    with make_sessionmaker(engine)() as session:
        return int(
            session.execute(
                select(Account.balance_cents).where(Account.id == PENDING_ACCOUNT)
            ).scalar_one()
        )


def _audit_ok(engine: Engine) -> None:
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures


def _next_unit_wins(
    engine: Engine, load: BlockLoader, player: Player, other: Player
) -> tuple[int, int, int]:
    """A block at 1 € whose next unit wins at least 1 €, ``player`` with the stake: another
    player buys the units before it. That unit's block id, serial and lot."""
    block_id = load(100)
    serial, lot = _winning_serial(engine, block_id, at_least=100)
    other.deposit(100 * serial)
    for _ in range(serial - 1):
        assert other.play(100, "auto").status_code == 201
    player.deposit(100)
    return block_id, serial, lot


def test_a_jouer_lot_shows_and_counts_only_at_the_fourth_grid(
    engine: Engine, load: BlockLoader, player: Player, other: Player
) -> None:
    _, serial, lot = _next_unit_wins(engine, load, player, other)
    remaining = player.get("/prizes/remaining", stake_cents=100).json()
    bought = player.play(100, "jouer").json()
    assert bought["serial"] == serial
    pid = bought["play_id"]
    seen = {"me": player.get("/me").json(), "history": player.get("/plays").json()}
    # The remaining prizes still count the lot: a count that moved would tell it.
    assert player.get("/prizes/remaining", stake_cents=100).json() == remaining
    assert seen["me"]["balance_cents"] == 0
    assert _pending(engine) == lot  # held, and accounted for
    _audit_ok(engine)
    # Nothing spends it: with the lot pending, the balance holds no stake.
    r = player.play(100, "jouer")
    assert (r.status_code, r.json()["error"]) == (402, "insufficient_funds")
    hidden = ("bonus", "combinations", "prize_cents", "ticket", "balance_after_cents")
    for grid in (2, 4, 1):
        r = player.post(f"/plays/{pid}/reveal", {"grid": grid})
        assert all(r.json()[k] is None for k in hidden), grid
        assert player.get("/me").json() == seen["me"], grid
        view = player.get(f"/plays/{pid}").json()
        assert all(view[k] is None for k in hidden), grid
        (listed,) = player.get("/plays").json()["plays"]
        assert all(listed[k] is None for k in hidden), grid
        assert player.get(f"/plays/{pid}/proof").status_code == 409
        assert player.get("/prizes/remaining", stake_cents=100).json() == remaining
        assert _pending(engine) == lot
    done = player.post(f"/plays/{pid}/reveal", {"grid": 3}).json()
    assert done["finished"] is True
    assert done["prize_cents"] == lot
    assert done["balance_after_cents"] == lot
    assert player.get("/me").json()["balance_cents"] == lot
    assert player.get(f"/plays/{pid}").json()["prize_cents"] == lot
    assert player.get("/plays").json()["plays"][0]["prize_cents"] == lot
    assert _pending(engine) == 0
    after = {r["prize_cents"]: r["remaining"] for r in remaining}
    after[lot] -= 1
    now = player.get("/prizes/remaining", stake_cents=100).json()
    assert {r["prize_cents"]: r["remaining"] for r in now} == after
    # Uncovering a grid again credits nothing more; the lot is now spendable.
    player.post(f"/plays/{pid}/reveal", {"grid": 3})
    assert player.balance() == lot
    assert player.play(100, "auto").status_code == 201
    _audit_ok(engine)


def test_an_auto_lot_is_credited_at_once(engine: Engine, load: BlockLoader, player: Player) -> None:
    block_id = load(100)
    serial, lot = _winning_serial(engine, block_id, at_least=100)
    player.deposit(100 * serial)
    for _ in range(serial):
        play = player.play(100, "auto").json()
    assert play["prize_cents"] == lot
    assert player.balance() == play["balance_after_cents"]
    assert _pending(engine) == 0
    _audit_ok(engine)


def test_the_audit_counts_the_pending_lots(
    engine: Engine, load: BlockLoader, player: Player, other: Player
) -> None:
    block_id = load(100)
    serial, lot = _winning_serial(engine, block_id, at_least=50)
    other.deposit(100 * serial)
    for _ in range(serial - 1):
        other.play(100, "auto")
    player.deposit(100)
    pid = player.play(100, "jouer").json()["play_id"]
    _audit_ok(engine)
    with make_sessionmaker(engine)() as session:  # finished without its lot moved: caught
        session.execute(update(PlayRow).where(PlayRow.id == pid).values(revealed=15))
        session.commit()
        report = run_audit(connection=session.connection())
    assert report.failures == [
        f"pending lots equal unfinished plays' lots: pending account {lot}, "
        "lots of jouer plays not fully uncovered 0"
    ]


def test_the_pages_play_shows_three_grids_by_reads_and_ends_in_one_write(
    engine: Engine, load: BlockLoader, player: Player, other: Player
) -> None:
    """The page's « Jouer »: grids 1 to 3 read (nothing written, nothing told early), then one
    reveal of every grid that ends the play and moves its lot."""
    block_id, serial, lot = _next_unit_wins(engine, load, player, other)
    pid = player.play(100, "jouer").json()["play_id"]
    before = {"me": player.get("/me").json(), "play": player.get(f"/plays/{pid}").json()}
    with make_sessionmaker(engine)() as session:
        cells = session.execute(
            select(UnitRow.cells).where(UnitRow.block_id == block_id, UnitRow.serial == serial)
        ).scalar_one()
    codes = {}
    for grid in (3, 1, 2):
        r = player.get(f"/plays/{pid}/grids/{grid}")
        assert r.status_code == 200, r.text
        assert r.json()["play_id"] == pid
        assert r.json()["grid"] == grid
        codes[grid] = r.json()["codes"]
        # A read: the play, the balance and the pending lot as the purchase left them.
        assert player.get(f"/plays/{pid}").json() == before["play"]
        assert player.get("/me").json() == before["me"]
        assert _pending(engine) == lot
    assert other.get(f"/plays/{pid}/grids/1").status_code == 404  # another's play
    r = player.post(f"/plays/{pid}/reveal", {"grids": [1, 2, 3, 4]})
    assert r.status_code == 200, r.text
    done = r.json()
    assert done["finished"] is True
    assert done["prize_cents"] == lot
    assert done["grids"][:3] == [codes[1], codes[2], codes[3]]
    assert "-".join(done["grids"]) == done["ticket"]
    # The grid read is the unit's own: the ticket's codes of the sold unit's cells.
    assert len(cells) == 64
    assert player.get("/me").json()["balance_cents"] == lot
    assert _pending(engine) == 0
    # Read again once finished: the same codes.
    assert player.get(f"/plays/{pid}/grids/2").json()["codes"] == codes[2]
    _audit_ok(engine)
