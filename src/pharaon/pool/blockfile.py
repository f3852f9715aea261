"""A block on disk: one Parquet file, the units in sale order and a JSON manifest.

Columns ``serial`` (int32, 1..n in the order of sale), ``ticket`` (string, the 67-character
ticket of docs/rules.md §5) and ``prize_cents`` (int64, the unit's lot at the block's price); the
manifest is JSON under the schema metadata key ``pharaon.manifest``. Any Parquet reader
(pyarrow, pandas, DuckDB, Spark) reads it. The format is described in docs/block-format.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from pharaon.game.board import GRID_CELLS, GRIDS, UNIT_CELLS
from pharaon.game.rules import PrizeTier, rules
from pharaon.game.unit import SEPARATOR, TICKET_LENGTH

FORMAT: Final = "pharaon-block/1"
MANIFEST_KEY: Final = b"pharaon.manifest"
COLUMNS: Final = ("serial", "ticket", "prize_cents")
_LINES_PER_UPDATE: Final = 1 << 15
_ROWS_PER_THREAD: Final = 1 << 16
_ROWS_PER_GROUP: Final = 1 << 17  # Parquet row groups, and batches when reading
_READ_BUFFER: Final = 1 << 20
_SCHEMA: Final = pa.schema(
    [("serial", pa.int32()), ("ticket", pa.string()), ("prize_cents", pa.int64())]
)


class BlockFileError(ValueError):
    """A block file that cannot be read as a block; the message is one line."""


@dataclass(frozen=True, slots=True)
class CompositionCount:
    """How many units of the block win ``amount_cents`` (at the block's price) through
    exactly these combinations (``lines``, ``bonus``: symbol codes, sorted)."""

    amount_cents: int
    lines: str
    bonus: str
    count: int

    @property
    def key(self) -> str:
        return f"L:{self.lines} B:{self.bonus}"


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a block is and how to check it. Amounts in cents at the block's price."""

    game: str
    price_cents: int
    emission: str
    block_number: int
    block_size: int
    generator_version: str
    design_name: str
    design_digest: str
    test: bool
    prize_table: tuple[PrizeTier, ...]
    counts: tuple[CompositionCount, ...]
    units_sha256: str
    merkle_root: str
    # SHA-256 (hex) of each secret key; None in files made before keys were committed to.
    vendor_key_commitment: str | None = None
    operator_key_commitment: str | None = None
    format: str = FORMAT
    leaf: str = field(
        default="SHA-256(0x00 || serial u32 BE || ticket ASCII || prize_cents u64 BE)"
    )
    node: str = "SHA-256(0x01 || left || right)"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """Build from parsed JSON; raises BlockFileError naming the first bad field."""
        if not isinstance(data, dict):
            raise BlockFileError("manifest: expected a JSON object")
        want: dict[str, type] = {
            "game": str,
            "price_cents": int,
            "emission": str,
            "block_number": int,
            "block_size": int,
            "generator_version": str,
            "design_name": str,
            "design_digest": str,
            "test": bool,
            "prize_table": list,
            "counts": list,
            "units_sha256": str,
            "merkle_root": str,
            "format": str,
            "leaf": str,
            "node": str,
        }
        for key, kind in want.items():
            value = data.get(key)
            if value is None:
                raise BlockFileError(f"manifest: missing field {key!r}")
            if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
                raise BlockFileError(f"manifest: {key} must be {kind.__name__}, got {value!r}")
        if data["format"] != FORMAT:
            raise BlockFileError(f"manifest: format must be {FORMAT!r}, got {data['format']!r}")
        try:
            table = tuple(
                PrizeTier(_int(t["lots"]), _int(t["amount_cents"]), bool(t["cumulation_only"]))
                for t in data["prize_table"]
            )
            counts = tuple(
                CompositionCount(
                    _int(c["amount_cents"]), str(c["lines"]), str(c["bonus"]), _int(c["count"])
                )
                for c in data["counts"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BlockFileError(f"manifest: bad prize_table or counts entry ({exc})") from None
        fields = {k: data[k] for k in want}
        fields.update(prize_table=table, counts=counts)
        for name in ("vendor_key_commitment", "operator_key_commitment"):
            value = data.get(name)
            if value is not None and not _SHA256_HEX.fullmatch(str(value)):
                raise BlockFileError(f"manifest: {name} must be 64 hex digits, got {value!r}")
            fields[name] = value
        return cls(**fields)


_SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True, eq=False)
class Block:
    """A block in sale order: ``units`` (n, 64) int8 symbol indices, ``lots_cents`` (n,) int64.

    The serial of row ``i`` is ``i + 1``.
    """

    manifest: Manifest
    units: NDArray[np.int8]
    lots_cents: NDArray[np.int64]
    # (n, 67) uint8: the units' ticket bytes, as read from a file (so checks hash what the
    # file holds) or as encoded once by the generator; None: encode them when needed.
    tickets: NDArray[np.uint8] | None = None

    @property
    def size(self) -> int:
        return int(self.units.shape[0])


_ALPHABET: Final = np.frombuffer(rules().symbol_codes.encode("ascii"), dtype=np.uint8)
_DECODE: Final = np.full(256, -1, dtype=np.int8)
_DECODE[_ALPHABET] = np.arange(len(_ALPHABET), dtype=np.int8)


def _encode(units: Any, alphabet: Any, out: Any) -> None:
    for i in range(units.shape[0]):
        for g in range(GRIDS):
            base = g * (GRID_CELLS + 1)
            for j in range(GRID_CELLS):
                out[i, base + j] = alphabet[units[i, g * GRID_CELLS + j]]
            if g < GRIDS - 1:
                out[i, base + GRID_CELLS] = _SEPARATOR_BYTE


def _decode(tickets: Any, table: Any, out: Any) -> int:
    """Fill ``out`` from ``tickets``; the first bad row's index, or -1."""
    for i in range(tickets.shape[0]):
        for g in range(GRIDS):
            base = g * (GRID_CELLS + 1)
            if g < GRIDS - 1 and tickets[i, base + GRID_CELLS] != _SEPARATOR_BYTE:
                return i
            for j in range(GRID_CELLS):
                v = table[tickets[i, base + j]]
                if v < 0:
                    return i
                out[i, g * GRID_CELLS + j] = v
    return -1


def _mismatch(units: Any, tickets: Any, alphabet: Any) -> int:
    """The first row whose ticket is not the encoding of its unit, or -1."""
    for i in range(units.shape[0]):
        for g in range(GRIDS):
            base = g * (GRID_CELLS + 1)
            if g < GRIDS - 1 and tickets[i, base + GRID_CELLS] != _SEPARATOR_BYTE:
                return i
            for j in range(GRID_CELLS):
                v = units[i, g * GRID_CELLS + j]
                if v < 0 or v >= alphabet.shape[0] or tickets[i, base + j] != alphabet[v]:
                    return i
    return -1


_SEPARATOR_BYTE: Final = ord(SEPARATOR)
_mismatch_compiled = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_mismatch))
_encode_compiled = cast(Callable[..., None], numba.njit(cache=True, nogil=True)(_encode))
_decode_compiled = cast(Callable[..., int], numba.njit(cache=True, nogil=True)(_decode))


def ticket_bytes(units: NDArray[np.int8]) -> NDArray[np.uint8]:
    """(n, 67) uint8: the ASCII ticket strings of (n, 64) int8 units (symbol indices 0..5)."""
    if units.size and (units.min() < 0 or units.max() >= len(_ALPHABET)):
        raise ValueError("units must hold symbol indices 0..5")
    n = units.shape[0]
    out = np.empty((n, TICKET_LENGTH), dtype=np.uint8)
    units = np.ascontiguousarray(units)
    half = n // 2
    if half < _ROWS_PER_THREAD:
        _encode_compiled(units, _ALPHABET, out)
        return out
    with ThreadPoolExecutor(max_workers=1) as pool:  # the kernel releases the GIL
        other = pool.submit(_encode_compiled, units[half:], _ALPHABET, out[half:])
        _encode_compiled(units[:half], _ALPHABET, out[:half])
        other.result()
    return out


def first_mismatch(units: NDArray[np.int8], tickets: NDArray[np.uint8]) -> int:
    """The first row (0-based) where ``tickets`` ((n, 67) uint8) is not the ticket string of
    ``units`` ((n, 64) int8), or -1 if they agree."""
    if tickets.shape != (units.shape[0], TICKET_LENGTH):
        return 0
    return _mismatch_compiled(np.ascontiguousarray(units), np.ascontiguousarray(tickets), _ALPHABET)


def units_from_ticket_bytes(tickets: NDArray[np.uint8]) -> NDArray[np.int8]:
    """(n, 64) int8 units from (n, 67) ASCII tickets; raises BlockFileError on a bad one."""
    n = tickets.shape[0]
    units = np.empty((n, UNIT_CELLS), dtype=np.int8)
    tickets = np.ascontiguousarray(tickets)
    half = n // 2 if n >= 2 * _ROWS_PER_THREAD else 0
    with ThreadPoolExecutor(max_workers=1) as pool:  # the kernel releases the GIL
        other = pool.submit(_decode_compiled, tickets[half:], _DECODE, units[half:])
        first = _decode_compiled(tickets[:half], _DECODE, units[:half])
        if first < 0:
            first = other.result()
            first = first + half if first >= 0 else -1
    if first >= 0:
        text = bytes(tickets[first]).decode("ascii", errors="replace")
        raise BlockFileError(f"unit {first + 1}: not a ticket string: {text!r}")
    return units


def units_sha256(tickets: NDArray[np.uint8]) -> str:
    """SHA-256 (hex) of the ticket strings in sale order, each followed by a newline.

    The same bytes as the ``ticket`` column of the CSV export, one per line.
    """
    digest = hashlib.sha256()
    lines = np.empty((min(_LINES_PER_UPDATE, tickets.shape[0]), TICKET_LENGTH + 1), np.uint8)
    lines[:, TICKET_LENGTH] = ord("\n")
    for start in range(0, tickets.shape[0], _LINES_PER_UPDATE):
        part = tickets[start : start + _LINES_PER_UPDATE]
        lines[: part.shape[0], :TICKET_LENGTH] = part
        digest.update(lines[: part.shape[0]].data)
    return digest.hexdigest()


def write_block(block: Block, path: Path | str) -> None:
    """Write ``block`` to ``path`` (Parquet, uncompressed, row groups of 131,072 units)."""
    n = block.size
    if block.units.shape != (n, UNIT_CELLS) or block.lots_cents.shape != (n,):
        raise ValueError("block units must be (n, 64) and lots (n,)")
    tickets = block.tickets if block.tickets is not None else ticket_bytes(block.units)
    offsets = np.arange(0, (n + 1) * TICKET_LENGTH, TICKET_LENGTH, dtype=np.int32)
    ticket_column = pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(tickets))
    )
    manifest = json.dumps(block.manifest.as_json(), ensure_ascii=False, sort_keys=True)
    schema = _SCHEMA.with_metadata({MANIFEST_KEY: manifest.encode("utf-8")})
    table = pa.Table.from_arrays(
        [
            pa.array(np.arange(1, n + 1, dtype=np.int32)),
            ticket_column,
            pa.array(np.ascontiguousarray(block.lots_cents, dtype=np.int64)),
        ],
        schema=schema,
    )
    # No compression: what zstd saves is not worth its time in a block's budget
    # (docs/performance.md); the few distinct lots are dictionary-encoded.
    pq.write_table(
        table,
        str(path),
        compression="none",
        use_dictionary=["prize_cents"],
        write_statistics=False,
        row_group_size=_ROWS_PER_GROUP,
    )


def read_block(path: Path | str) -> Block:
    """Read a block file; raises :class:`BlockFileError` with a one-line message.

    Read a batch at a time into the block's arrays: Arrow never holds the whole ticket column
    (reading it at once took three times its size in memory).
    """
    try:
        parquet = pq.ParquetFile(str(path), pre_buffer=False, buffer_size=_READ_BUFFER)
        metadata = parquet.schema_arrow.metadata or {}
        schema = parquet.schema_arrow
        n = parquet.metadata.num_rows
    except FileNotFoundError:
        raise BlockFileError(f"{path}: no such file") from None
    except (OSError, pa.ArrowException) as exc:
        raise BlockFileError(f"{path}: not a readable block file ({_first_line(exc)})") from None
    if MANIFEST_KEY not in metadata:
        raise BlockFileError(f"{path}: no pharaon manifest in the file's metadata")
    try:
        manifest = Manifest.from_json(json.loads(metadata[MANIFEST_KEY].decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BlockFileError(f"{path}: the manifest is not valid JSON") from None
    except BlockFileError as exc:
        raise BlockFileError(f"{path}: {exc}") from None
    if schema.names != list(COLUMNS):
        raise BlockFileError(
            f"{path}: columns must be {', '.join(COLUMNS)}, got {', '.join(schema.names)}"
        )
    for name, kind in zip(COLUMNS, _SCHEMA.types, strict=True):
        if schema.field(name).type != kind:
            raise BlockFileError(f"{path}: column {name} must be {kind}")
    if n != manifest.block_size:
        raise BlockFileError(
            f"{path}: the file holds {n} units, the manifest says {manifest.block_size}"
        )
    serial = np.empty(n, dtype=np.int64)
    lots = np.empty(n, dtype=np.int64)
    tickets = np.empty((n, TICKET_LENGTH), dtype=np.uint8)
    try:
        done = 0
        for batch in parquet.iter_batches(batch_size=_ROWS_PER_GROUP, use_threads=False):
            m = batch.num_rows
            if done + m > n:
                raise BlockFileError(f"the file holds more than the {n} units it announces")
            serial[done : done + m] = batch.column(0).to_numpy()
            lots[done : done + m] = batch.column(2).to_numpy()
            tickets[done : done + m] = _ticket_matrix(batch.column(1), m, done)
            done += m
        if done != n:
            raise BlockFileError(f"the file holds {done} units, not the {n} it announces")
        units = units_from_ticket_bytes(tickets)
    except (OSError, pa.ArrowException) as exc:  # nulls, for instance
        raise BlockFileError(f"{path}: bad column data ({_first_line(exc)})") from None
    except BlockFileError as exc:
        raise BlockFileError(f"{path}: {exc}") from None
    expected = np.arange(1, n + 1, dtype=np.int64)
    if not np.array_equal(serial, expected):
        first = int(np.argmax(serial != expected))
        raise BlockFileError(f"{path}: row {first + 1} has serial {serial[first]}, not {first + 1}")
    return Block(manifest=manifest, units=units, lots_cents=lots, tickets=tickets)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _ticket_matrix(array: pa.StringArray, n: int, first_row: int) -> NDArray[np.uint8]:
    """(n, 67) uint8 straight from the string array's buffers (no Python strings);
    ``first_row``: the index of its first row in the block, for messages."""
    if array.null_count:
        raise BlockFileError("the ticket column holds nulls")
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[array.offset : array.offset + n + 1]
    if not np.array_equal(np.diff(offsets), np.full(n, TICKET_LENGTH, dtype=np.int32)):
        lengths = np.diff(offsets)
        first = int(np.argmax(lengths != TICKET_LENGTH))
        raise BlockFileError(
            f"unit {first_row + first + 1}: a ticket has {TICKET_LENGTH} characters, got "
            f"{lengths[first]}"
        )
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    start = int(offsets[0])
    return data[start : start + n * TICKET_LENGTH].reshape(n, TICKET_LENGTH)
