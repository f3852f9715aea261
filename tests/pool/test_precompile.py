"""`make` compiles the block factory's kernels at install, so that a new user's first block
command starts at once instead of compiling for ~10 s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every kernel compiled into an empty cache: ~20 s of CPU


def _pharaon(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "pharaon", *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout


def test_after_precompiling_block_commands_compile_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # empty: a new install
    subprocess.run(
        [sys.executable, "-m", "pharaon.pool.precompile"], env=env, check=True, capture_output=True
    )
    env["NUMBA_DEBUG_CACHE"] = "1"  # numba says what it loads from the cache and what it saves
    block = str(tmp_path / "block.parquet")
    out = _pharaon(env, "generate", "--price", "3", "--out", block)
    out += _pharaon(env, "verify", block)
    assert "data loaded" in out
    assert [line for line in out.splitlines() if "data saved" in line] == []
