"""The block as CSV (docs/rules.md §5): ``serial,ticket,prize_cents``, one row per unit, in the
order of sale. Written from arrays in chunks; no Python string per unit."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from pharaon.pool.blockfile import Block, ticket_bytes
from pharaon.pool.layout import Progress

HEADER: Final = b"serial,ticket,prize_cents\n"
_CHUNK: Final = 100_000


def _decimal(values: NDArray[np.int64]) -> list[bytes]:
    return [str(v).encode("ascii") for v in values.tolist()]


def csv_rows(block: Block, start: int, stop: int) -> bytes:
    """The CSV rows of units ``start..stop-1`` (0-based), as bytes."""
    tickets = ticket_bytes(block.units[start:stop])
    serials = _decimal(np.arange(start + 1, stop + 1, dtype=np.int64))
    lots = _decimal(block.lots_cents[start:stop])
    rows = [
        b"%s,%s,%s\n" % (s, t, p) for s, t, p in zip(serials, _rows(tickets), lots, strict=True)
    ]
    return b"".join(rows)


def _rows(tickets: NDArray[np.uint8]) -> list[bytes]:
    blob = tickets.tobytes()
    width = tickets.shape[1]
    return [blob[i : i + width] for i in range(0, len(blob), width)]


def export_csv(block: Block, path: Path | str, *, progress: Progress | None = None) -> None:
    """Write ``block`` as CSV to ``path``."""
    with open(path, "wb") as out:
        out.write(HEADER)
        for start in range(0, block.size, _CHUNK):
            stop = min(block.size, start + _CHUNK)
            out.write(csv_rows(block, start, stop))
            if progress is not None:
                progress("export", stop, block.size)
