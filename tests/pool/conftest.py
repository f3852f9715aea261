"""Blocks for the pool tests: small test blocks built in milliseconds (the real
1,000,000-unit blocks, ``real_blocks``, are tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pharaon.pool.blockfile import Block, write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from tests.conftest import OPERATOR, VENDOR


@pytest.fixture(scope="session")
def small_block() -> Block:
    """A 1,000-unit test block at 1 €, from fixed keys."""
    return generate_block(100, design=test_design(1_000), vendor_key=VENDOR, operator_key=OPERATOR)


@pytest.fixture
def small_file(small_block: Block, tmp_path: Path) -> Path:
    path = tmp_path / "small.parquet"
    write_block(small_block, path)
    return path
