"""An auditor's sign-off before sale (service/approvals.py), on both databases: a loaded block
stays off sale until approved, the server's verification of the stored units, the refusals
(the loader, twice, not loaded, unknown, a failed verification) and the audit record."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.orm import Session

from pharaon.service import approvals, blocks, loading
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    VerificationFailedError,
)
from pharaon.store.tables import AuditCheckpoint, AuditRecord, Block, UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import make_block

LOADER = "operator:admin@example.org"
AUDITOR = "operator:auditor@example.org"


def _load(db: Transactions, price_cents: int = 100, *, size: int = 60, number: int = 1) -> int:
    block = make_block(price_cents, size=size, number=number)
    return db.write(loading.load_block, block=block, allow_test=True, actor=LOADER, now=utcnow())


def _block(db: Transactions, block_id: int) -> blocks.BlockSummary:
    return next(b for b in db.read(blocks.list_blocks) if b.block_id == block_id)


def _approve(db: Transactions, block_id: int, actor: str = AUDITOR) -> str:
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    return db.write(
        approvals.approve, block_id=block_id, actor=actor, figures=figures, now=utcnow()
    )


def _records(db: Transactions, kind: str) -> list[tuple[str, dict[str, object]]]:
    return db.read(
        lambda connection: [
            (actor, json.loads(payload))
            for actor, payload in connection.execute(
                select(AuditRecord.actor, AuditRecord.payload)
                .where(AuditRecord.kind == kind)
                .order_by(AuditRecord.seq)
            )
        ]
    )


def test_a_loaded_block_goes_on_sale_only_once_an_auditor_approves_it(
    db: Transactions,
) -> None:
    block = make_block(100, size=60)
    block_id = db.write(
        loading.load_block, block=block, allow_test=True, actor=LOADER, now=utcnow()
    )
    loaded = _block(db, block_id)
    assert (loaded.state, loaded.loaded_by, loaded.approved_at, loaded.approved_by) == (
        "loaded",
        LOADER,
        None,
        None,
    )
    assert db.write(lambda session: blocks.open_next(session, price_cents=100)) is None
    assert db.read(blocks.remaining_prizes, stake_cents=100) == []  # none to be told yet

    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert figures.ok, figures.problems
    assert figures.units == 60
    assert figures.units_sha256_matched
    assert figures.merkle_root_matched
    table = {t.amount_cents: t.lots for t in block.manifest.prize_table}
    assert {x.amount_cents: (x.found, x.table) for x in figures.lots} == {
        a: (n, n) for a, n in table.items()
    }
    assert figures.fairness is not None
    assert {"ok", "measures", "order"} <= set(figures.fairness)
    assert figures.summary.startswith("OK: 60 units")

    before = utcnow()
    assert (
        db.write(approvals.approve, block_id=block_id, actor=AUDITOR, figures=figures, now=before)
        == "open"
    )
    opened = _block(db, block_id)
    assert (opened.state, opened.approved_by, opened.approved_at) == ("open", AUDITOR, before)
    [(actor, payload)] = _records(db, "block_approved")
    assert actor == AUDITOR
    assert payload == {
        "block_id": block_id,
        "emission": block.manifest.emission,
        "price_cents": 100,
        "block_number": 1,
        "loaded_by": LOADER,
        "verification": json.loads(json.dumps(figures.as_json())),
    }
    reasons = db.read(
        lambda connection: list(
            connection.execute(
                select(AuditCheckpoint.reason).order_by(AuditCheckpoint.id)
            ).scalars()
        )
    )
    assert reasons == ["block_loaded", "block_approved"]
    assert db.read(run_audit).ok


def test_blocks_open_in_id_order_among_the_approved(db: Transactions) -> None:
    first = _load(db, number=1)
    second = _load(db, number=2)
    third = _load(db, number=3)
    assert _approve(db, third) == "open"  # the first approved opens, whatever its id
    assert _approve(db, second) == "loaded"  # behind the open one
    now = utcnow()
    db.write(blocks.deactivate, block_id=third, reason="misprint", actor=LOADER, now=now)
    states = {b.block_id: b.state for b in db.read(blocks.list_blocks)}
    assert states == {first: "loaded", second: "open", third: "deactivated"}
    db.write(blocks.deactivate, block_id=second, reason="misprint", actor=LOADER, now=now)
    assert _block(db, first).state == "loaded"  # never approved: nothing on sale at 1 €
    assert _approve(db, first) == "open"


def test_the_operator_who_loaded_a_block_may_not_approve_it(db: Transactions) -> None:
    block_id = _load(db)
    with pytest.raises(ForbiddenError, match="another auditor must approve it"):
        _approve(db, block_id, actor=LOADER)
    assert _block(db, block_id).approved_at is None
    assert _records(db, "block_approved") == []


def test_a_block_is_approved_once_and_only_while_loaded(db: Transactions) -> None:
    block_id = _load(db)
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    _approve(db, block_id)
    with pytest.raises(ConflictError, match="already approved"):
        _approve(db, block_id, actor="operator:other@example.org")
    stopped = _load(db, number=2)
    db.write(blocks.deactivate, block_id=stopped, reason="misprint", actor=LOADER, now=utcnow())
    with pytest.raises(ConflictError, match="is deactivated"):
        _approve(db, stopped)
    with pytest.raises(NotFoundError):
        db.read(approvals.verify_loaded, block_id=99)
    with pytest.raises(NotFoundError):
        db.write(
            approvals.approve,
            block_id=99,
            actor=AUDITOR,
            figures=replace(figures, block_id=99),
            now=utcnow(),
        )
    with pytest.raises(InvalidError, match="the figures are of block"):
        db.write(approvals.approve, block_id=stopped, actor=AUDITOR, figures=figures, now=utcnow())
    assert len(_records(db, "block_approved")) == 1


def _tamper(db: Transactions, block_id: int, serial: int = 7, **values: object) -> None:
    def change(session: Session) -> None:
        session.execute(
            update(UnitRow)
            .where(UnitRow.block_id == block_id, UnitRow.serial == serial)
            .values(values)
        )

    db.write(change)


def _cells(db: Transactions, block_id: int) -> bytes:
    def read(connection: Connection) -> bytes:
        return bytes(
            connection.execute(
                select(UnitRow.cells).where(UnitRow.block_id == block_id, UnitRow.serial == 7)
            ).scalar_one()
        )

    return db.read(read)


def test_a_tampered_stored_unit_fails_the_verification_and_the_approval(
    db: Transactions,
) -> None:
    block_id = _load(db)
    cells = bytearray(_cells(db, block_id))
    cells[0], cells[63] = cells[63], (cells[0] + 1) % 6
    _tamper(db, block_id, cells=bytes(cells))
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert not figures.ok
    assert not figures.units_sha256_matched
    assert not figures.merkle_root_matched
    assert "units_sha256 of the stored units differs from the block's" in figures.problems
    assert figures.summary.startswith("FAILED: ")
    with pytest.raises(VerificationFailedError, match="fails its verification") as refused:
        db.write(approvals.approve, block_id=block_id, actor=AUDITOR, figures=figures, now=utcnow())
    assert refused.value.code == "verification_failed"
    assert (_block(db, block_id).state, _block(db, block_id).approved_at) == ("loaded", None)
    assert _records(db, "block_approved") == []


def test_a_stored_lot_changed_is_caught_by_the_evaluator(db: Transactions) -> None:
    block_id = _load(db)
    # A unit that does not hold the top lot already (the block is random: unit 7 may).
    serial = db.read(
        lambda connection: connection.execute(
            select(func.min(UnitRow.serial)).where(
                UnitRow.block_id == block_id, UnitRow.lot_cents != 2_500_000
            )
        ).scalar_one()
    )
    _tamper(db, block_id, serial, lot_cents=2_500_000)
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert not figures.ok
    assert any("prize_cents differ from their evaluation" in p for p in figures.problems)
    assert any(x.amount_cents == 2_500_000 and x.found == 2 for x in figures.lots)


@pytest.mark.parametrize(
    ("cells", "problem"),
    [(b"\x09" * 64, "unit 7: a cell is not a symbol"), (b"\x00" * 63, "unit 7: its cells hold 63")],
)
def test_stored_cells_that_are_no_unit_fail_the_verification(
    db: Transactions, cells: bytes, problem: str
) -> None:
    block_id = _load(db)
    _tamper(db, block_id, cells=cells)
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert not figures.ok
    assert figures.problems[0].startswith(problem)
    assert figures.fairness is None


def test_a_missing_stored_unit_fails_the_verification(db: Transactions) -> None:
    block_id = _load(db)
    db.write(
        lambda session: session.execute(
            delete(UnitRow).where(UnitRow.block_id == block_id, UnitRow.serial == 60)
        )
    )
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert figures.problems == ("the block holds 59 stored units, its size is 60",)


def test_a_changed_commitment_fails_the_verification(db: Transactions) -> None:
    block_id = _load(db)
    db.write(
        lambda session: session.execute(
            update(Block).where(Block.id == block_id).values(merkle_root="0" * 64)
        )
    )
    figures = db.read(approvals.verify_loaded, block_id=block_id)
    assert figures.units_sha256_matched
    assert not figures.merkle_root_matched
    assert not figures.ok
