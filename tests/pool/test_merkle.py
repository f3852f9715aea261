from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pharaon.pool.blockfile import Block, ticket_bytes
from pharaon.pool.merkle import (
    audit_path,
    leaf_hash,
    leaf_hashes,
    merkle_proof,
    merkle_root,
    sha256_rows,
    verify_proof,
)


def _reference_root(leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1 MTH, recursively, with hashlib."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, right = _reference_root(leaves[:k]), _reference_root(leaves[k:])
    return hashlib.sha256(b"\x01" + left + right).digest()


@pytest.mark.parametrize("width", [64, 65, 80, 100, 119])
def test_sha256_rows_matches_hashlib(width: int) -> None:
    rng = np.random.default_rng(width)
    messages = rng.integers(0, 256, size=(300, width), dtype=np.uint8)
    out = sha256_rows(messages)
    for row, digest in zip(messages, out, strict=True):
        assert bytes(digest) == hashlib.sha256(bytes(row)).digest()


def test_sha256_rows_refuses_other_widths() -> None:
    with pytest.raises(ValueError, match=r"64\.\.119"):
        sha256_rows(np.zeros((2, 20), dtype=np.uint8))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33])
def test_roots_match_the_rfc_6962_definition(n: int) -> None:
    rng = np.random.default_rng(n)
    leaves = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    assert merkle_root(leaves) == _reference_root([bytes(x) for x in leaves]).hex()


def test_leaf_hashes_match_the_documented_encoding(small_block: Block) -> None:
    tickets = ticket_bytes(small_block.units[:50])
    hashes = leaf_hashes(tickets, small_block.lots_cents[:50])
    for i in range(50):
        ticket = bytes(tickets[i]).decode("ascii")
        lot = int(small_block.lots_cents[i])
        data = b"\x00" + (i + 1).to_bytes(4, "big") + ticket.encode() + lot.to_bytes(8, "big")
        assert bytes(hashes[i]) == hashlib.sha256(data).digest() == leaf_hash(i + 1, ticket, lot)


def test_every_unit_of_a_block_has_a_proof(small_block: Block) -> None:
    root = small_block.manifest.merkle_root
    tickets = ticket_bytes(small_block.units)
    for serial in (1, 2, 500, 999, 1000):
        proof = merkle_proof(small_block, serial)
        ticket = bytes(tickets[serial - 1]).decode("ascii")
        lot = int(small_block.lots_cents[serial - 1])
        assert verify_proof(root, serial, ticket, lot, proof)
        assert not verify_proof(root, serial, ticket, lot + 1, proof)
        assert not verify_proof(root, serial + 1 if serial < 1000 else 1, ticket, lot, proof)
        other = ticket.replace("P", "Y", 1) if "P" in ticket else ticket.replace("Y", "P", 1)
        assert not verify_proof(root, serial, other, lot, proof)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 13])
def test_proofs_of_every_leaf_of_small_trees(n: int) -> None:
    rng = np.random.default_rng(n)
    tickets = rng.integers(65, 90, size=(n, 67), dtype=np.uint8)
    lots = rng.integers(0, 10_000, size=n).astype(np.int64)
    leaves = leaf_hashes(tickets, lots)
    root = merkle_root(leaves)
    for i in range(n):
        ticket = bytes(tickets[i]).decode("ascii")
        assert verify_proof(root, i + 1, ticket, int(lots[i]), audit_path(leaves, i))


def test_a_proof_for_a_serial_outside_the_block(small_block: Block) -> None:
    with pytest.raises(ValueError, match=r"serial must be 1\.\.1000"):
        merkle_proof(small_block, 1001)


def test_a_tampered_proof_fails(small_block: Block) -> None:
    proof = merkle_proof(small_block, 10)
    ticket = bytes(ticket_bytes(small_block.units[9:10])[0]).decode("ascii")
    lot = int(small_block.lots_cents[9])
    side, sibling = proof[0]
    bad = [("L" if side == "R" else "R", sibling), *proof[1:]]
    assert not verify_proof(small_block.manifest.merkle_root, 10, ticket, lot, bad)
