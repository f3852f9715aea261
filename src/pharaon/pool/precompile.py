"""Compile the block factory's kernels into numba's on-disk cache, once, when the package is
installed (`make` runs ``python -m pharaon.pool.precompile``).

Without it a new user's first `pharaon generate` compiles every kernel before it starts; after
it, every process finds them in the cache (docs/performance.md). A small test block goes through
the same calls as a real one (the kernels' types do not depend on the block's size): generated,
written, read back and verified, with every SHA-256 path the CPU has. The hashing paths and the
block's life compile side by side in two processes (numba compiles on one core): 11.2 s instead
of 16.9 on 2 cores of an Intel Xeon, for 20.6 s of CPU instead of 16.6.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from pharaon.pool import _sha256
from pharaon.pool.blockfile import write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.verify import verify_block


def precompile() -> None:
    """Run every kernel once on small inputs; raises RuntimeError if the block fails."""
    spawn = multiprocessing.get_context("spawn")  # no numba state shared with this process
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        for done in [pool.submit(_hashing_paths), pool.submit(_a_block)]:
            done.result()


def _hashing_paths() -> None:
    """Every SHA-256 path the CPU has: rows, leaves, parents."""
    for kernels in _sha256.available().values():
        _sha256.sha256_rows(np.zeros((2, 80), dtype=np.uint8), kernels)
        leaves = np.empty((2, 32), dtype=np.uint8)
        tickets, lots = np.zeros((2, 67), dtype=np.uint8), np.zeros(2, dtype=np.int64)
        _sha256.run("leaves", (tickets, lots, leaves), 2, kernels)
        _sha256.run("parents", (leaves, np.empty((1, 32), dtype=np.uint8)), 1, kernels)


def _a_block() -> None:
    """A small test block generated, written, read back and verified."""
    with tempfile.TemporaryDirectory(prefix="pharaon-precompile-") as folder:
        path = Path(folder) / "block.parquet"
        write_block(generate_block(100, design=test_design(1_000)), path)
        report = verify_block(path)
    if not report.ok:
        raise RuntimeError(f"the precompiled kernels made a bad block: {report.summary}")


def main() -> None:
    started = time.perf_counter()
    precompile()
    seconds = time.perf_counter() - started
    print(f"pharaon: the block factory's kernels are in numba's cache ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
