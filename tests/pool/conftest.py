"""Blocks for the pool tests: small test blocks built in milliseconds, and (slow) one real
1,000,000-unit block per price, generated once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from pharaon.pool.blockfile import Block, write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block

# Fixed keys: reproducible test blocks (never keys of a real block).
VENDOR = "00112233445566778899aabbccddeeff"
OPERATOR = "f0e1d2c3b4a5968778695a4b3c2d1e0f"


@pytest.fixture(scope="session")
def small_block() -> Block:
    """A 1,000-unit test block at 1 €, from fixed keys."""
    return generate_block(100, design=test_design(1_000), vendor_key=VENDOR, operator_key=OPERATOR)


@pytest.fixture
def small_file(small_block: Block, tmp_path: Path) -> Path:
    path = tmp_path / "small.parquet"
    write_block(small_block, path)
    return path


@pytest.fixture(scope="session")
def real_blocks(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """One regulation block per price, written to disk (generated on first use)."""
    out: dict[int, Path] = {}
    folder = tmp_path_factory.mktemp("real-blocks")
    for price in (100, 200, 300):
        block = generate_block(
            price, emission="T1", block_number=price // 100, vendor_key=VENDOR,
            operator_key=OPERATOR,
        )  # fmt: skip
        path = folder / f"block-{price}.parquet"
        write_block(block, path)
        out[price] = path
    return out
