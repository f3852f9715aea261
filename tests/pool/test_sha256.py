from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pharaon.pool import _sha256

KERNELS = {"default": None, "portable": _sha256.PORTABLE}


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("width", [64, 65, 80, 119])
def test_both_compressions_match_hashlib(kernels: str, width: int) -> None:
    rng = np.random.default_rng(width)
    messages = rng.integers(0, 256, size=(9_000, width), dtype=np.uint8)  # two threads' worth
    out = _sha256.sha256_rows(messages, KERNELS[kernels])
    for row, digest in zip(messages, out, strict=True):
        assert bytes(digest) == hashlib.sha256(bytes(row)).digest()


@pytest.mark.parametrize("kernels", KERNELS)
def test_leaf_and_node_kernels_match_hashlib(kernels: str) -> None:
    rng = np.random.default_rng(1)
    n = 10_000
    tickets = rng.integers(65, 90, size=(n, 67), dtype=np.uint8)
    lots = rng.integers(0, 10**7, size=n, dtype=np.int64)
    leaves = np.empty((n, 32), dtype=np.uint8)
    _sha256.run("leaves", (tickets, lots, leaves), n, KERNELS[kernels])
    up = np.empty((n // 2, 32), dtype=np.uint8)
    _sha256.run("parents", (leaves, up), n // 2, KERNELS[kernels])
    for i in range(0, n, 97):
        data = b"\x00" + (i + 1).to_bytes(4, "big") + bytes(tickets[i])
        assert bytes(leaves[i]) == hashlib.sha256(data + int(lots[i]).to_bytes(8, "big")).digest()
        pair = bytes(leaves[i - i % 2]) + bytes(leaves[i - i % 2 + 1])
        assert bytes(up[i // 2]) == hashlib.sha256(b"\x01" + pair).digest()
