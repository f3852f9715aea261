from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from pharaon.pool import _sha256

KERNELS = _sha256.available()  # every path this CPU can take is checked


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("width", [64, 65, 80, 119])
def test_every_compression_matches_hashlib(kernels: str, width: int) -> None:
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


def test_the_sha_extensions_are_offered_exactly_when_the_cpu_has_them() -> None:
    assert ("sha-extensions" in KERNELS) == _sha256.has_sha_extensions()
    assert KERNELS["portable"] is _sha256.PORTABLE


def test_the_faster_kernels_are_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    slow: _sha256.Kernels = {}
    quick: _sha256.Kernels = {}
    monkeypatch.setattr(_sha256, "available", lambda: {"slow": slow, "quick": quick})
    monkeypatch.setattr(_sha256, "trial_seconds", lambda kernels: 0.5 if kernels is slow else 0.1)
    _sha256.fastest.cache_clear()
    try:
        assert _sha256.fastest() == ("quick", quick)
    finally:
        _sha256.fastest.cache_clear()


def test_a_trial_times_real_hashing() -> None:
    portable = _sha256.trial_seconds(_sha256.PORTABLE, rows=256)
    assert 0 < portable < _sha256.trial_seconds(_sha256.PORTABLE, rows=16_384)


def test_a_fresh_process_finds_the_compiled_kernels_in_numba_cache() -> None:
    hash_some = (
        "import numpy as np\n"
        "from pharaon.pool import _sha256\n"
        "for kernels in _sha256.available().values():\n"
        "    _sha256.sha256_rows(np.zeros((4, 80), dtype=np.uint8), kernels)\n"
        "    _sha256.run('leaves', (np.zeros((4, 67), np.uint8), np.zeros(4, np.int64),"
        " np.empty((4, 32), np.uint8)), 4, kernels)\n"
        "    _sha256.run('parents', (np.zeros((4, 32), np.uint8), np.empty((2, 32), np.uint8)),"
        " 2, kernels)\n"
    )
    env = {**os.environ, "NUMBA_DEBUG_CACHE": "1"}
    subprocess.run([sys.executable, "-c", hash_some], check=True, env=env, capture_output=True)
    again = subprocess.run(
        [sys.executable, "-c", hash_some], check=True, env=env, capture_output=True, text=True
    )
    loaded = [
        line for line in again.stdout.splitlines() if "_sha256" in line and "data loaded" in line
    ]
    saved = [line for line in again.stdout.splitlines() if "_sha256" in line and "saved" in line]
    assert saved == []  # compiled again: the cache did not recognise its own kernels
    assert len(loaded) == 3 * len(KERNELS)
