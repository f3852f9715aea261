from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pharaon.game.unit import array_to_tickets
from pharaon.pool.blockfile import (
    MANIFEST_KEY,
    Block,
    BlockFileError,
    read_block,
    ticket_bytes,
    units_from_ticket_bytes,
    units_sha256,
    write_block,
)


def test_round_trip(small_block: Block, small_file: Path) -> None:
    back = read_block(small_file)
    assert back.manifest == small_block.manifest
    assert np.array_equal(back.units, small_block.units)
    assert back.units.dtype == np.int8
    assert np.array_equal(back.lots_cents, small_block.lots_cents)
    assert back.lots_cents.dtype == np.int64


def test_standard_tools_read_it(small_block: Block, small_file: Path) -> None:
    table = pq.read_table(small_file)
    assert table.schema.names == ["serial", "ticket", "prize_cents"]
    rows = table.to_pylist()
    assert rows[0]["serial"] == 1
    assert rows[-1]["serial"] == 1000
    assert [r["ticket"] for r in rows] == array_to_tickets(small_block.units)
    assert [r["prize_cents"] for r in rows] == small_block.lots_cents.tolist()
    manifest = json.loads(table.schema.metadata[MANIFEST_KEY])
    assert manifest["merkle_root"] == small_block.manifest.merkle_root
    assert manifest["test"] is True


def test_ticket_bytes_agree_with_the_game_core(small_block: Block) -> None:
    tickets = ticket_bytes(small_block.units)
    strings = [bytes(t).decode("ascii") for t in tickets]
    assert strings == array_to_tickets(small_block.units)
    assert np.array_equal(units_from_ticket_bytes(tickets), small_block.units)


def test_units_sha256_is_the_tickets_one_per_line(small_block: Block) -> None:
    import hashlib

    text = "".join(t + "\n" for t in array_to_tickets(small_block.units))
    assert (
        units_sha256(ticket_bytes(small_block.units)) == hashlib.sha256(text.encode()).hexdigest()
    )


def test_same_block_same_bytes(small_block: Block, tmp_path: Path) -> None:
    write_block(small_block, tmp_path / "a.parquet")
    write_block(small_block, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def _rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BlockFileError, match="no such file"):
        read_block(tmp_path / "nope.parquet")


def test_not_a_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    path.write_bytes(b"hello, not parquet")
    with pytest.raises(BlockFileError, match="not a readable block file"):
        read_block(path)


def test_truncated_file(small_file: Path) -> None:
    data = small_file.read_bytes()
    small_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(BlockFileError, match="not a readable block file"):
        read_block(small_file)


def test_no_manifest(small_file: Path) -> None:
    table = pq.read_table(small_file)
    _rewrite(small_file, table.replace_schema_metadata({}))
    with pytest.raises(BlockFileError, match="no pharaon manifest"):
        read_block(small_file)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda _: b"{not json", "not valid JSON"),
        (lambda m: json.dumps({**m, "price_cents": "100"}).encode(), "price_cents must be int"),
        (
            lambda m: json.dumps({k: v for k, v in m.items() if k != "merkle_root"}).encode(),
            "missing field 'merkle_root'",
        ),
        (lambda m: json.dumps({**m, "format": "other/9"}).encode(), "format must be"),
        (lambda m: json.dumps({**m, "counts": [{"x": 1}]}).encode(), "bad prize_table or counts"),
        (lambda m: json.dumps({**m, "block_size": 999}).encode(), "holds 1000 units"),
    ],
)
def test_bad_manifests(small_file: Path, edit: object, message: str) -> None:
    table = pq.read_table(small_file)
    manifest = json.loads(table.schema.metadata[MANIFEST_KEY])
    new = edit(manifest)  # type: ignore[operator]
    _rewrite(small_file, table.replace_schema_metadata({MANIFEST_KEY: new}))
    with pytest.raises(BlockFileError, match=message):
        read_block(small_file)


def test_wrong_columns(small_file: Path) -> None:
    table = pq.read_table(small_file)
    renamed = table.rename_columns(["serial", "unit", "prize_cents"])
    _rewrite(small_file, renamed.replace_schema_metadata(table.schema.metadata))
    with pytest.raises(BlockFileError, match="columns must be serial, ticket, prize_cents"):
        read_block(small_file)


def test_serials_out_of_order(small_file: Path) -> None:
    table = pq.read_table(small_file)
    serial = np.arange(1, 1001, dtype=np.int32)
    serial[[3, 4]] = serial[[4, 3]]
    table = table.set_column(0, pa.field("serial", pa.int32()), pa.array(serial))
    _rewrite(small_file, table)
    with pytest.raises(BlockFileError, match="row 4 has serial 5"):
        read_block(small_file)


@pytest.mark.parametrize(
    ("ticket", "message"),
    [("Q" * 67, "unit 8: not a ticket string"), ("P" * 66, "a ticket has 67 characters, got 66")],
)
def test_bad_tickets(small_file: Path, ticket: str, message: str) -> None:
    table = pq.read_table(small_file)
    tickets = table.column("ticket").to_pylist()
    tickets[7] = ticket
    table = table.set_column(1, pa.field("ticket", pa.string()), pa.array(tickets))
    _rewrite(small_file, table)
    with pytest.raises(BlockFileError, match=message):
        read_block(small_file)


def test_a_block_in_memory_keeps_its_shapes(small_block: Block) -> None:
    assert small_block.units.shape == (1000, 64)
    assert small_block.size == 1000
    with pytest.raises(ValueError, match=r"units must be \(n, 64\) and lots \(n,\)"):
        write_block(replace(small_block, lots_cents=small_block.lots_cents[:5]), "/dev/null")
