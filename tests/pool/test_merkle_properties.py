"""Property tests of the Merkle tree: for any number of leaves and any serial, the audit path
verifies against the root, and any flipped byte makes it fail."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pharaon.pool.merkle import audit_path, leaf_hashes, merkle_root, verify_proof
from tests.pool.test_merkle import _reference_root

TICKET_BYTES = 67
MAX_LEAVES = 300


@st.composite
def trees(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """(tickets, lots, serial): 1..300 units of random ticket bytes and lots, one serial."""
    n = draw(st.integers(min_value=1, max_value=MAX_LEAVES))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    tickets = rng.integers(65, 91, size=(n, TICKET_BYTES), dtype=np.uint8)
    lots = rng.integers(0, 10**10, size=n).astype(np.int64)
    serial = draw(st.integers(min_value=1, max_value=n))
    return tickets, lots, serial


def _flip(hex_text: str, byte: int, bit: int) -> str:
    raw = bytearray(bytes.fromhex(hex_text))
    raw[byte % len(raw)] ^= 1 << bit
    return raw.hex()


@settings(max_examples=150, deadline=None)  # the first call compiles the hashing kernel
@given(trees(), st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=7))
def test_any_serial_has_a_proof_and_a_flipped_byte_fails(
    tree: tuple[np.ndarray, np.ndarray, int], where: int, bit: int
) -> None:
    tickets, lots, serial = tree
    leaves = leaf_hashes(tickets, lots)
    root = merkle_root(leaves)
    assert root == _reference_root([bytes(x) for x in leaves]).hex()
    proof = audit_path(leaves, serial - 1)
    assert len(proof) <= max(1, int(np.ceil(np.log2(len(leaves)))))
    ticket = bytes(tickets[serial - 1]).decode("ascii")
    lot = int(lots[serial - 1])
    assert verify_proof(root, serial, ticket, lot, proof)

    assert not verify_proof(_flip(root, where, bit), serial, ticket, lot, proof)
    flipped_ticket = bytearray(ticket.encode("ascii"))
    flipped_ticket[where % TICKET_BYTES] ^= 1 << min(bit, 6)  # stays ASCII
    assert not verify_proof(root, serial, flipped_ticket.decode("ascii"), lot, proof)
    assert not verify_proof(root, serial, ticket, lot ^ (1 << (where % 40)), proof)
    if proof:
        step = where % len(proof)
        side, sibling = proof[step]
        bad = [*proof[:step], (side, _flip(sibling, where, bit)), *proof[step + 1 :]]
        assert not verify_proof(root, serial, ticket, lot, bad)
    if len(leaves) > 1:
        other = serial % len(leaves) + 1
        assert not verify_proof(root, other, ticket, lot, proof)
