"""The audit log's Merkle tree (pharaon.pool.tlog) against RFC 6962's reference vectors (the
Certificate Transparency ones), and every proof of every small tree both ways: made, checked,
and refused once changed."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pharaon.pool import tlog

# certificate-transparency's test leaves and the roots of the trees of their first 1..8.
CT_LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = {
    (0, 8): [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (5, 8): [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
}
CT_CONSISTENCY = {
    (2, 8): [
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (6, 8): [
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
    (2, 5): [
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
}
LEAVES = [tlog.leaf_hash(d) for d in CT_LEAVES]


def _stored(leaves: list[bytes]) -> dict[tlog.Node, bytes]:
    """Every complete node of the tree over ``leaves``, as a store keeps them."""
    nodes: dict[tlog.Node, bytes] = {(0, i): h for i, h in enumerate(leaves)}
    level, row = 0, leaves
    while len(row) > 1:
        row = [tlog.node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)]
        level += 1
        nodes.update({(level, i): h for i, h in enumerate(row)})
    return nodes


def _inclusion(leaves: list[bytes], index: int) -> list[bytes]:
    return tlog.prove(tlog.inclusion_ranges(index, len(leaves)), _stored(leaves).__getitem__)


def _consistency(leaves: list[bytes], first: int, second: int) -> list[bytes]:
    stored = _stored(leaves[:second])
    return tlog.prove(tlog.consistency_ranges(first, second), stored.__getitem__)


def test_the_roots_are_rfc_6962s() -> None:
    assert tlog.root([]) == tlog.EMPTY_ROOT == hashlib.sha256(b"").digest()
    for n, want in enumerate(CT_ROOTS, start=1):
        assert tlog.root(LEAVES[:n]).hex() == want
        assert tlog.range_hash(0, n, _stored(LEAVES[:n])).hex() == want
        frontier = tlog.Frontier()
        for leaf in LEAVES[:n]:
            frontier.append(leaf)
        assert frontier.root().hex() == want


@pytest.mark.parametrize(("index", "size"), sorted(CT_INCLUSION))
def test_the_inclusion_proofs_are_rfc_6962s(index: int, size: int) -> None:
    proof = _inclusion(LEAVES[:size], index)
    assert [h.hex() for h in proof] == CT_INCLUSION[index, size]
    root = bytes.fromhex(CT_ROOTS[size - 1])
    assert tlog.verify_inclusion(LEAVES[index], index, size, proof, root)
    assert not tlog.verify_inclusion(LEAVES[index], index ^ 1, size, proof, root)


@pytest.mark.parametrize(("first", "second"), sorted(CT_CONSISTENCY))
def test_the_consistency_proofs_are_rfc_6962s(first: int, second: int) -> None:
    proof = _consistency(LEAVES, first, second)
    assert [h.hex() for h in proof] == CT_CONSISTENCY[first, second]
    old, new = bytes.fromhex(CT_ROOTS[first - 1]), bytes.fromhex(CT_ROOTS[second - 1])
    assert tlog.verify_consistency(first, second, old, new, proof)
    assert not tlog.verify_consistency(first, second, new, old, proof)


MANY = [tlog.leaf_hash(i.to_bytes(4, "big")) for i in range(70)]


def _tampered(proof: list[bytes]) -> list[list[bytes]]:
    """The proof with a byte flipped in each hash, a hash dropped, one added, two swapped."""
    out = []
    for i, h in enumerate(proof):
        out.append([*proof[:i], bytes([h[0] ^ 1]) + h[1:], *proof[i + 1 :]])
    if proof:
        out += [proof[:-1], proof[1:]]
    out.append([*proof, b"\xab" * 32])
    if len(proof) > 1 and proof[0] != proof[1]:
        out.append([proof[1], proof[0], *proof[2:]])
    return out


def test_every_inclusion_proof_holds_and_no_tampered_one_does() -> None:
    for n in range(1, 40):
        root = tlog.root(MANY[:n])
        for i in range(n):
            proof = _inclusion(MANY[:n], i)
            assert tlog.verify_inclusion(MANY[i], i, n, proof, root), (i, n)
            if n > 1:
                assert not tlog.verify_inclusion(MANY[(i + 1) % n], i, n, proof, root)
            for bad in _tampered(proof):
                assert not tlog.verify_inclusion(MANY[i], i, n, bad, root), (i, n, bad)


def test_every_consistency_proof_holds_and_no_tampered_one_does() -> None:
    roots = [tlog.root(MANY[:n]) for n in range(41)]
    for second in range(41):
        for first in range(second + 1):
            proof = _consistency(MANY, first, second)
            assert tlog.verify_consistency(first, second, roots[first], roots[second], proof)
            if 0 < first < second:
                other = tlog.root([*MANY[: first - 1], b"\x00" * 32])  # a rewritten history
                assert not tlog.verify_consistency(first, second, other, roots[second], proof)
                for bad in _tampered(proof):
                    assert not tlog.verify_consistency(
                        first, second, roots[first], roots[second], bad
                    ), (first, second)


def test_degenerate_consistency_cases() -> None:
    r4, r5 = tlog.root(MANY[:4]), tlog.root(MANY[:5])
    assert tlog.verify_consistency(4, 4, r4, r4, [])
    assert not tlog.verify_consistency(4, 4, r4, r5, [])
    assert not tlog.verify_consistency(4, 4, r4, r4, [r4])
    assert tlog.verify_consistency(0, 5, tlog.EMPTY_ROOT, r5, [])
    assert not tlog.verify_consistency(0, 5, r4, r5, [])
    assert not tlog.verify_consistency(5, 4, r5, r4, [])
    assert not tlog.verify_consistency(4, 5, r4, r5, [])


@given(st.integers(1, 5000), st.data())
def test_a_range_is_cut_into_aligned_complete_subtrees(size: int, data: st.DataObject) -> None:
    """The ranges of a proof are folded from stored nodes: each complete, aligned, and together
    exactly the range."""
    index = data.draw(st.integers(0, size - 1))
    first = data.draw(st.integers(0, size))
    for start, end in [*tlog.inclusion_ranges(index, size), *tlog.consistency_ranges(first, size)]:
        at = start
        for level, node in tlog.complete_subtrees(start, end):
            assert node << level == at
            at += 1 << level
        assert at == end


def test_the_frontier_agrees_with_the_reference_at_every_size() -> None:
    frontier = tlog.Frontier()
    assert frontier.root() == tlog.EMPTY_ROOT
    for n, leaf in enumerate(MANY, start=1):
        frontier.append(leaf)
        assert frontier.root() == tlog.root(MANY[:n])


def test_proofs_of_impossible_positions_are_refused() -> None:
    with pytest.raises(ValueError, match="leaf index"):
        tlog.inclusion_ranges(8, 8)
    with pytest.raises(ValueError, match="first <= second"):
        tlog.consistency_ranges(5, 3)
    assert not tlog.verify_inclusion(LEAVES[0], 8, 8, [], tlog.root(LEAVES))
    assert not tlog.verify_inclusion(LEAVES[0], 0, 8, [b"short"], tlog.root(LEAVES))
