"""Batch evaluator throughput on one core: prints units per second for 1,000,000 units.

Target (issue 2): >= 10 million units/s, i.e. a 1,000,000-unit block in <= 0.1 s.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from pharaon.game.batch import evaluate_batch

UNITS = 1_000_000
REPEATS = 7


def main() -> None:
    rng = np.random.default_rng(12345)  # a reproducible load, not an outcome
    units = rng.integers(0, 6, size=(UNITS, 64), dtype=np.int8)
    start = time.perf_counter()
    evaluate_batch(units[:1])
    print(f"first call (numba compile or cache load): {time.perf_counter() - start:.2f} s")
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = evaluate_batch(units)
        times.append(time.perf_counter() - start)
    best, median = min(times), statistics.median(times)
    print(
        f"units: {UNITS:,}  winners: {(result.lots_cents > 0).mean():.1%}  "
        f"malformed: {result.malformed.mean():.1%}"
    )
    print(f"cold (first full batch): {UNITS / times[0] / 1e6:.1f} M units/s ({times[0]:.3f} s)")
    print(f"median of {REPEATS}: {UNITS / median / 1e6:.1f} M units/s ({median:.3f} s)")
    print(f"best of {REPEATS}: {UNITS / best / 1e6:.1f} M units/s ({best:.3f} s)")
    verdict = "OK" if UNITS / median >= 10e6 else "BELOW TARGET"
    print(f"target >= 10.0 M units/s (median): {verdict}")


if __name__ == "__main__":
    main()
