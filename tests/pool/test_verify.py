from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pharaon.pool.blockfile import MANIFEST_KEY, Block, CompositionCount, write_block
from pharaon.pool.verify import verify_block


def test_a_good_block_verifies(small_block: Block, small_file: Path) -> None:
    for what in (small_block, small_file, str(small_file)):
        report = verify_block(what)
        assert report.ok, report.problems
        assert report.problems == []
        assert report.summary.startswith("OK: test block E1/1 at 1,00 €, 1,000 units, 259 winning")


def _with_units(block: Block, units: np.ndarray) -> Block:
    """The block with other units (and no ticket bytes: they are encoded from the units)."""
    return replace(block, units=units, tickets=None)


def _losing_row(block: Block) -> int:
    return int(np.flatnonzero(block.lots_cents == 0)[0])


def test_units_that_differ_from_their_ticket_bytes(small_block: Block) -> None:
    assert small_block.tickets is not None  # the generator keeps the bytes it hashed
    units = small_block.units.copy()
    units[7, 20] = (units[7, 20] + 1) % 6
    report = verify_block(replace(small_block, units=units))
    assert not report.ok
    assert "unit 8: the cells differ from the ticket string" in report.problems


def test_one_unit_altered_so_it_wins(small_block: Block) -> None:
    units = small_block.units.copy()
    row = _losing_row(small_block)
    units[row, 0:4] = 4  # a J line in grid 1, row 1
    report = verify_block(_with_units(small_block, units))
    assert not report.ok
    text = " ".join(report.problems)
    assert f"serials {row + 1}" in text
    assert "prize_cents differ from their evaluation" in text
    assert "units_sha256 does not match" in text
    assert "merkle_root does not match" in text


def test_one_unit_altered_without_changing_its_lot(small_block: Block) -> None:
    from pharaon.game.batch import evaluate_batch

    units = small_block.units.copy()
    row = _losing_row(small_block)
    for value in range(6):
        units[row, 5] = value
        if (
            value != small_block.units[row, 5]
            and evaluate_batch(units[row : row + 1]).lots_cents[0] == 0
        ):
            break
    report = verify_block(_with_units(small_block, units))
    assert not report.ok
    assert report.problems == [
        "units_sha256 does not match the units",
        "merkle_root does not match the units",
    ]


def test_a_lot_changed(small_block: Block) -> None:
    lots = small_block.lots_cents.copy()
    row = _losing_row(small_block)
    lots[row] = 100
    report = verify_block(replace(small_block, lots_cents=lots))
    assert not report.ok
    assert any("prize_cents differ" in p for p in report.problems)
    assert any("merkle_root" in p for p in report.problems)


def test_a_malformed_unit(small_block: Block) -> None:
    from pharaon.game.board import BONUS_CELLS

    units = small_block.units.copy()
    units[3, list(BONUS_CELLS[:5])] = 5  # five scarabs in a row of the bonus grid
    report = verify_block(_with_units(small_block, units))
    assert not report.ok
    assert any("malformed" in p and "serials 4" in p for p in report.problems)


def test_two_units_swapped_keep_the_table_but_not_the_hashes(small_block: Block) -> None:
    win = int(np.flatnonzero(small_block.lots_cents > 0)[0])
    lose = _losing_row(small_block)
    order = np.arange(small_block.size)
    order[[win, lose]] = order[[lose, win]]
    block = replace(
        small_block,
        units=small_block.units[order],
        lots_cents=small_block.lots_cents[order],
        tickets=None,
    )
    report = verify_block(block)
    assert not report.ok
    assert report.problems == [
        "units_sha256 does not match the units",
        "merkle_root does not match the units",
    ]


def test_manifest_counts_edited(small_block: Block) -> None:
    counts = list(small_block.manifest.counts)
    first = counts[-1]
    counts[-1] = CompositionCount(first.amount_cents, first.lines, first.bonus, first.count + 1)
    block = replace(small_block, manifest=replace(small_block.manifest, counts=tuple(counts)))
    report = verify_block(block)
    assert not report.ok
    assert "the manifest says" in report.problems[0]


def test_manifest_prize_table_edited(small_block: Block) -> None:
    table = list(small_block.manifest.prize_table)
    table[0] = replace(table[0], lots=2)
    block = replace(small_block, manifest=replace(small_block.manifest, prize_table=tuple(table)))
    report = verify_block(block)
    assert not report.ok
    assert "1 units win 25 000,00 €, the table says 2" in " ".join(report.problems).replace(
        "\u202f", " "
    )


def test_a_test_block_cannot_pose_as_a_regulation_block(small_block: Block) -> None:
    block = replace(small_block, manifest=replace(small_block.manifest, test=False))
    report = verify_block(block)
    assert not report.ok
    assert "a regulation block holds 1000000 units, this one 1000" in report.problems[0]


def test_a_manifest_edited_on_disk(small_file: Path) -> None:
    table = pq.read_table(small_file)
    manifest = json.loads(table.schema.metadata[MANIFEST_KEY])
    manifest["merkle_root"] = "00" * 32
    pq.write_table(
        table.replace_schema_metadata({MANIFEST_KEY: json.dumps(manifest).encode()}), small_file
    )
    report = verify_block(small_file)
    assert not report.ok
    assert report.problems == ["merkle_root does not match the units"]


def test_a_lot_edited_on_disk(small_file: Path) -> None:
    table = pq.read_table(small_file)
    lots = table.column("prize_cents").to_numpy().copy()
    lots[0] += 50
    table = table.set_column(2, pa.field("prize_cents", pa.int64()), pa.array(lots))
    pq.write_table(table, small_file)
    report = verify_block(small_file)
    assert not report.ok
    assert "serials 1 " in report.problems[0] + " "


def test_a_truncated_file_is_a_problem_not_a_traceback(small_file: Path) -> None:
    small_file.write_bytes(small_file.read_bytes()[:1000])
    report = verify_block(small_file)
    assert not report.ok
    assert "not a readable block file" in report.problems[0]


def test_a_block_written_after_tampering_verifies_not(small_block: Block, tmp_path: Path) -> None:
    units = small_block.units.copy()
    units[0] = units[1]
    path = tmp_path / "t.parquet"
    write_block(_with_units(small_block, units), path)
    assert not verify_block(path).ok


@pytest.mark.slow
def test_real_blocks_verify(real_blocks: dict[int, Path]) -> None:
    for price, path in real_blocks.items():
        report = verify_block(path)
        assert report.ok, report.problems
        assert "1,000,000 units, 255,505 winning" in report.summary
        assert "block T1/" in report.summary, price
