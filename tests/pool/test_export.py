from __future__ import annotations

import csv
import hashlib
import random
from pathlib import Path

import numpy as np
import pytest

from pharaon.game.batch import evaluate_batch
from pharaon.game.evaluate import evaluate
from pharaon.game.rules import rules
from pharaon.game.unit import parse_ticket
from pharaon.pool.blockfile import Block, read_block
from pharaon.pool.export import export_csv


def recheck_csv(path: Path, manifest_sha: str, price_cents: int, sample: int) -> int:
    """Check a CSV export without the block factory: returns the number of rows.

    Parses the file with the csv module, evaluates ``sample`` random rows with the single-unit
    evaluator and every row with the batch evaluator, and checks the prize table and the
    tickets' SHA-256.
    """
    with path.open(newline="", encoding="ascii") as f:
        reader = csv.reader(f)
        assert next(reader) == ["serial", "ticket", "prize_cents"]
        rows = list(reader)
    serials = [int(r[0]) for r in rows]
    assert serials == list(range(1, len(rows) + 1))
    tickets = [r[1] for r in rows]
    lots = np.array([int(r[2]) for r in rows], dtype=np.int64)
    for i in random.Random(5).sample(range(len(rows)), sample):
        assert evaluate(parse_ticket(tickets[i]), price_cents).prize_cents == lots[i]
    codes = rules().symbol_codes
    table = np.full(256, -1, dtype=np.int8)
    table[np.frombuffer(codes.encode(), dtype=np.uint8)] = np.arange(6, dtype=np.int8)
    raw = np.frombuffer("".join(tickets).replace("-", "").encode("ascii"), dtype=np.uint8)
    units = table[raw].reshape(len(rows), 64)
    assert (units >= 0).all()
    result = evaluate_batch(units, price_cents)
    assert not result.malformed.any()
    assert np.array_equal(result.lots_cents, lots)
    text = "".join(t + "\n" for t in tickets).encode("ascii")
    assert hashlib.sha256(text).hexdigest() == manifest_sha
    return len(rows)


def test_the_csv_of_a_block(small_block: Block, tmp_path: Path) -> None:
    path = tmp_path / "block.csv"
    export_csv(small_block, path)
    lines = path.read_text("ascii").splitlines()
    assert lines[0] == "serial,ticket,prize_cents"
    assert len(lines) == 1_001
    serial, ticket, prize = lines[1].split(",")
    assert serial == "1"
    assert len(ticket) == 67
    assert int(prize) == small_block.lots_cents[0]
    n = recheck_csv(path, small_block.manifest.units_sha256, 100, sample=300)
    assert n == 1_000


def test_the_csv_of_a_three_euro_block_has_cents_at_three_euros(tmp_path: Path) -> None:
    from pharaon.pool.design import test_design
    from pharaon.pool.generate import generate_block

    block = generate_block(300, design=test_design(1_000))
    path = tmp_path / "block.csv"
    export_csv(block, path)
    assert ",7500000\n" in path.read_text("ascii")
    recheck_csv(path, block.manifest.units_sha256, 300, sample=100)


@pytest.mark.slow
def test_real_blocks_export_and_recheck(real_blocks: dict[int, Path], tmp_path: Path) -> None:
    for price, path in real_blocks.items():
        block = read_block(path)
        out = tmp_path / f"{price}.csv"
        export_csv(block, out)
        assert recheck_csv(out, block.manifest.units_sha256, price, sample=2_000) == 1_000_000
        out.unlink()
