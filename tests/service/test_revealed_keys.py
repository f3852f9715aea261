"""Keys revealed at close (service/revealed_keys.py), on both databases."""

from __future__ import annotations

import json
import threading
import time

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.keys import commitment
from pharaon.service import blocks, loading, revealed_keys
from pharaon.service.audit import run_audit
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    BlockRefusedError,
    ConflictError,
    InvalidError,
    NotFoundError,
    NotRevealedError,
)
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditCheckpoint, AuditRecord, Block, RevealedKeys
from pharaon.store.transactions import Transactions

VENDOR = bytes(range(1, 33))
OPERATOR = bytes(range(101, 133))
OTHER = bytes(range(201, 233))


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


def _load(
    factory: sessionmaker[Session],
    price_cents: int = 100,
    *,
    vendor: bytes = VENDOR,
    operator: bytes = OPERATOR,
    number: int = 1,
) -> int:
    """A 16-unit test block made from ``vendor`` and ``operator``, loaded (not on sale)."""
    block = generate_block(
        price_cents,
        block_number=number,
        design=test_design(16),
        vendor_key=vendor,
        operator_key=operator,
    )
    with factory.begin() as session:
        return loading.load_block(
            session=session, block=block, allow_test=True, actor="test", now=utcnow()
        )


def _close(factory: sessionmaker[Session], block_id: int) -> None:
    with factory.begin() as session:
        blocks.deactivate(
            session=session, block_id=block_id, reason="closed", actor="test", now=utcnow()
        )


def _reveal(
    factory: sessionmaker[Session],
    block_id: int,
    vendor: bytes = VENDOR,
    operator: bytes = OPERATOR,
) -> revealed_keys.Revealed:
    with factory.begin() as session:
        return revealed_keys.reveal(
            session=session,
            block_id=block_id,
            vendor_key=vendor,
            operator_key=operator,
            actor="operator:admin@example.org",
            now=utcnow(),
        )


def _stored(factory: sessionmaker[Session]) -> list[tuple[int, str, str]]:
    with factory() as session:
        return [
            (int(b), str(v), str(o))
            for b, v, o in session.execute(
                select(
                    RevealedKeys.block_id, RevealedKeys.vendor_key, RevealedKeys.operator_key
                ).order_by(RevealedKeys.block_id)
            )
        ]


def _records(factory: sessionmaker[Session]) -> list[dict[str, object]]:
    with factory() as session:
        return [
            json.loads(p)
            for p in session.execute(
                select(AuditRecord.payload)
                .where(AuditRecord.kind == "block_keys_revealed")
                .order_by(AuditRecord.seq)
            ).scalars()
        ]


def test_a_block_still_loaded_or_open_keeps_its_keys(factory: sessionmaker[Session]) -> None:
    block_id = _load(factory)
    with pytest.raises(ConflictError, match=f"block {block_id} is loaded"):
        _reveal(factory, block_id)
    assert _stored(factory) == []
    with factory() as session, pytest.raises(NotRevealedError):
        revealed_keys.revealed(connection=session.connection(), block_id=block_id)


def test_an_unknown_block(factory: sessionmaker[Session]) -> None:
    with pytest.raises(NotFoundError, match="no block with id 7"):
        _reveal(factory, 7)
    with factory() as session, pytest.raises(NotFoundError) as refused:
        revealed_keys.revealed(connection=session.connection(), block_id=7)
    assert refused.value.code == "not_found"


@pytest.mark.parametrize("wrong", ["vendor", "operator", "both"])
def test_a_key_that_is_not_the_blocks_is_refused_and_nothing_is_stored(
    factory: sessionmaker[Session], wrong: str
) -> None:
    block_id = _load(factory)
    _close(factory, block_id)
    vendor = OTHER if wrong in ("vendor", "both") else VENDOR
    operator = OTHER if wrong in ("operator", "both") else OPERATOR
    with pytest.raises(InvalidError) as refused:
        _reveal(factory, block_id, vendor, operator)
    said = refused.value.detail
    assert f"not block {block_id}'s" in said
    assert ("vendor" in said) == (wrong != "operator")
    assert ("operator key" in said) == (wrong != "vendor")
    for key in (VENDOR, OPERATOR, OTHER):  # a key, right or wrong, is never repeated
        assert key.hex() not in said
    assert _stored(factory) == []
    assert _records(factory) == []


def test_a_block_made_before_commitments_has_nothing_to_check_against(
    factory: sessionmaker[Session],
) -> None:
    block_id = _load(factory)
    _close(factory, block_id)
    with factory.begin() as session:
        manifest = json.loads(
            session.execute(select(Block.manifest_json).where(Block.id == block_id)).scalar_one()
        )
        manifest["vendor_key_commitment"] = manifest["operator_key_commitment"] = None
        session.execute(
            update(Block).where(Block.id == block_id).values(manifest_json=json.dumps(manifest))
        )
    with pytest.raises(ConflictError, match="before manifests committed"):
        _reveal(factory, block_id)
    assert _stored(factory) == []


def test_the_pair_is_published_once_every_block_it_made_is_closed(
    factory: sessionmaker[Session],
) -> None:
    first = _load(factory, 100)
    second = _load(factory, 200)
    third = _load(factory, 300)
    apart = _load(factory, 300, operator=OTHER, number=2)  # another pair: no bearing on this one
    _close(factory, first)
    with pytest.raises(ConflictError) as refused:
        _reveal(factory, first)
    said = refused.value.detail
    assert f"block {second} (loaded)" in said
    assert f"block {third} (loaded)" in said
    assert f"block {apart}" not in said
    assert _stored(factory) == []
    _close(factory, second)
    with pytest.raises(ConflictError, match=f"block {third} \\(loaded\\)"):
        _reveal(factory, second)
    _close(factory, third)
    done = _reveal(factory, second)
    assert done.block_id == second
    assert done.block_ids == (first, second, third)
    assert (done.vendor_key, done.operator_key) == (VENDOR.hex(), OPERATOR.hex())
    assert done.vendor_key_commitment == commitment(VENDOR)
    assert done.operator_key_commitment == commitment(OPERATOR)
    assert done.design_name == test_design(16).name
    assert done.design_digest == test_design(16).digest
    pair = (VENDOR.hex(), OPERATOR.hex())
    assert _stored(factory) == [(first, *pair), (second, *pair), (third, *pair)]
    assert _records(factory) == [
        {
            "block_ids": [first, second, third],
            "vendor_key_commitment": commitment(VENDOR),
            "operator_key_commitment": commitment(OPERATOR),
        }
    ]
    with factory() as session:
        shown = revealed_keys.revealed(connection=session.connection(), block_id=first)
        assert shown.block_ids == (first, second, third)
        assert shown.vendor_key == VENDOR.hex()
        with pytest.raises(NotRevealedError):
            revealed_keys.revealed(connection=session.connection(), block_id=apart)
        reasons = session.execute(select(AuditCheckpoint.reason)).scalars().all()
        assert reasons.count("keys_revealed") == 1
        assert run_audit(connection=session.connection()).ok


def test_revealing_again_answers_the_publication(factory: sessionmaker[Session]) -> None:
    block_id = _load(factory)
    _close(factory, block_id)
    first = _reveal(factory, block_id)
    again = _reveal(factory, block_id)
    assert again == first
    assert len(_stored(factory)) == 1
    assert len(_records(factory)) == 1
    with pytest.raises(InvalidError):  # the publication does not make a wrong key right
        _reveal(factory, block_id, OTHER, OPERATOR)


def test_a_block_made_from_published_keys_is_not_loaded(factory: sessionmaker[Session]) -> None:
    block_id = _load(factory)
    _close(factory, block_id)
    _load(factory, 200, operator=OTHER)  # another pair still loads
    _reveal(factory, block_id)
    with pytest.raises(BlockRefusedError, match="keys are published"):
        _load(factory, 100, number=2)
    with factory() as session:
        assert session.execute(select(func.count()).select_from(Block)).scalar_one() == 2


def test_two_reveals_at_once_both_answer_the_publication(
    factory: sessionmaker[Session], db: Transactions
) -> None:
    block_id = _load(factory)
    _close(factory, block_id)
    answers: list[object] = []
    with factory() as session, session.begin():
        held = revealed_keys.reveal(
            session=session,
            block_id=block_id,
            vendor_key=VENDOR,
            operator_key=OPERATOR,
            actor="operator:one@example.org",
            now=utcnow(),
        )

        def other() -> None:
            try:
                answers.append(
                    db.write(
                        revealed_keys.reveal,
                        block_id=block_id,
                        vendor_key=VENDOR,
                        operator_key=OPERATOR,
                        actor="operator:two@example.org",
                        now=utcnow(),
                    )
                )
            except Exception as exc:  # the test says what it was
                answers.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.5)  # the other waits for this transaction's row (or write lock)
    thread.join(timeout=30)
    assert answers == [held]
    assert len(_stored(factory)) == 1
    assert len(_records(factory)) == 1
    with factory() as session:
        assert session.execute(select(func.count()).select_from(RevealedKeys)).scalar_one() == 1
