"""A play's proof (service/proofs.py), on both databases: the path read from the stored tree is
the one computed from the block itself, and it takes the unit to the published root; only the
owner of a finished play gets it."""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import Engine, delete

from pharaon.game.modes import Mode
from pharaon.pool import merkle
from pharaon.pool.blockfile import Block
from pharaon.service import loading, plays, proofs
from pharaon.service.clock import utcnow
from pharaon.service.errors import ConflictError, NotFoundError
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import MerkleChunk
from pharaon.store.transactions import Transactions
from tests.conftest import approved, make_block
from tests.service.helpers import buy, funded_player

SIZE = 260  # two chunks of leaves, and levels where the last node has no sibling


@pytest.fixture
def block(db: Transactions) -> tuple[int, Block]:
    """A loaded block of :data:`SIZE` units at 1 €: its id, and the block as made."""
    made = make_block(100, size=SIZE)
    block_id = db.write(loading.load_block, block=made, allow_test=True, actor="test", now=utcnow())
    db.write(approved, block_id=block_id)
    return block_id, made


def _sell(engine: Engine, player_id: int, count: int, mode: Mode = Mode.AUTO) -> list[int]:
    sold = buy(
        make_sessionmaker(engine),
        [Order(player_id, 100, mode, secrets.token_hex(8)) for _ in range(count)],
    )
    assert all(isinstance(p, plays.PlayView) for p in sold), sold
    return [p.play_id for p in sold if isinstance(p, plays.PlayView)]


def test_path_nodes() -> None:
    assert proofs.path_nodes(1, 1) == []
    assert proofs.path_nodes(2, 1) == [(0, 1, "R")]
    assert proofs.path_nodes(2, 2) == [(0, 0, "L")]
    # Five leaves: the fifth has no sibling until the top.
    assert proofs.path_nodes(5, 5) == [(2, 0, "L")]
    assert proofs.path_nodes(5, 3) == [(0, 3, "R"), (1, 0, "L"), (2, 1, "R")]
    assert proofs.path_nodes(8, 6) == [(0, 4, "L"), (1, 3, "R"), (2, 0, "L")]


def test_every_sold_unit_s_proof_leads_to_the_published_root(
    engine: Engine, db: Transactions, block: tuple[int, Block]
) -> None:
    block_id, made = block
    ana = funded_player(make_sessionmaker(engine), "ana", 100_000)
    sold = _sell(engine, ana, SIZE)
    for play_id in (sold[0], sold[1], sold[255], sold[256], sold[-1]):
        proof = db.read(proofs.play_proof, player_id=ana, play_id=play_id)
        m = made.manifest
        assert (proof.play_id, proof.block_id, proof.game, proof.emission) == (
            play_id,
            block_id,
            m.game,
            m.emission,
        )
        assert (proof.price_cents, proof.block_number, proof.block_size) == (100, 1, SIZE)
        assert proof.merkle_root == m.merkle_root
        serial = proof.serial
        assert proof.lot_cents == int(made.lots_cents[serial - 1])
        assert list(proof.path) == merkle.merkle_proof(made, serial)
        assert merkle.verify_proof(
            proof.merkle_root, serial, proof.ticket, proof.lot_cents, list(proof.path)
        )
        # A different lot does not lead there.
        assert not merkle.verify_proof(
            proof.merkle_root, serial, proof.ticket, proof.lot_cents + 1, list(proof.path)
        )
    assert db.read(proofs.play_proof, player_id=ana, play_id=sold[-1]).serial == SIZE


def test_a_jouer_play_s_proof_waits_for_its_fourth_grid(
    engine: Engine, db: Transactions, block: tuple[int, Block]
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 1_000)
    [play_id] = _sell(engine, ana, 1, Mode.JOUER)
    db.write(
        plays.reveal, requests=[plays.Reveal(ana, play_id, g) for g in (1, 2, 3)], now=utcnow()
    )
    with pytest.raises(ConflictError):
        db.read(proofs.play_proof, player_id=ana, play_id=play_id)
    db.write(plays.reveal, requests=[plays.Reveal(ana, play_id, 4)], now=utcnow())
    proof = db.read(proofs.play_proof, player_id=ana, play_id=play_id)
    assert proof.serial == 1
    assert merkle.verify_proof(
        proof.merkle_root, 1, proof.ticket, proof.lot_cents, list(proof.path)
    )


def test_no_proof_of_someone_else_s_play(
    engine: Engine, db: Transactions, block: tuple[int, Block]
) -> None:
    factory = make_sessionmaker(engine)
    ana, bob = funded_player(factory, "ana", 1_000), funded_player(factory, "bob", 1_000)
    [play_id] = _sell(engine, ana, 1)
    for player_id, asked in ((bob, play_id), (ana, play_id + 1)):
        with pytest.raises(NotFoundError):
            db.read(proofs.play_proof, player_id=player_id, play_id=asked)


def test_a_tree_not_stored_is_said_so(
    engine: Engine, db: Transactions, block: tuple[int, Block]
) -> None:
    block_id, _ = block
    ana = funded_player(make_sessionmaker(engine), "ana", 1_000)
    [play_id] = _sell(engine, ana, 1)
    db.write(
        lambda session: session.execute(
            delete(MerkleChunk).where(MerkleChunk.block_id == block_id, MerkleChunk.level == 3)
        )
    )
    with pytest.raises(NotFoundError) as refused:
        db.read(proofs.play_proof, player_id=ana, play_id=play_id)
    assert refused.value.detail == f"the Merkle tree of block {block_id} is not stored"
