from __future__ import annotations

import numpy as np
import pytest

from pharaon.game.board import BONUS_CELLS, LINES, bonus_neighbours
from pharaon.game.evaluate import evaluate
from pharaon.game.rules import rules
from pharaon.game.unit import Unit
from pharaon.pool.blockfile import Block
from pharaon.pool.stats import (
    ORDER_TESTS,
    fairness,
    free_symbol_counts,
    look_alike,
    order_tests,
    runs_p,
    serial_correlation_p,
    winning_cells,
)


def test_winning_cells_are_the_cells_of_the_combinations(small_block: Block) -> None:
    cells = winning_cells(small_block.units)
    for row in range(0, small_block.size, 7):
        unit = Unit.from_array(small_block.units[row])
        want = np.zeros(64, dtype=bool)
        for c in evaluate(unit).combinations:
            for g, r, col in c.cells:
                want[(g - 1) * 16 + (r - 1) * 4 + (col - 1)] = True
        assert np.array_equal(cells[row], want), row


def test_free_symbol_counts_cover_every_free_cell(small_block: Block) -> None:
    winning = small_block.lots_cents > 0
    counts = free_symbol_counts(small_block.units, winning)
    assert counts[0].sum() == (~winning).sum() * 64
    assert counts.sum() == small_block.size * 64 - winning_cells(small_block.units).sum()


def _winning_set(row: np.ndarray) -> set[int]:
    """The unit cells of ``row``'s winning combinations, by the game's own evaluator."""
    unit = Unit.from_array(row)
    return {
        (g - 1) * 16 + (r - 1) * 4 + (col - 1)
        for c in evaluate(unit).combinations
        for g, r, col in c.cells
    }


def _reference(units: np.ndarray, winning: np.ndarray) -> dict[str, tuple[float, float]]:
    """The measures of docs/proofs.md written out cell by cell, unit by unit, from the game's
    evaluator and board: what look_alike must give with its masks and columns."""
    scarab = rules().symbol_codes.index("S")
    tally: dict[str, list[list[int]]] = {}

    def add(name: str, w: int, hit: int, counted: int) -> None:
        t = tally.setdefault(name, [[0, 0], [0, 0]])
        t[w][0] += hit
        t[w][1] += counted

    for row, won in zip(units, winning.tolist(), strict=True):
        w = int(won)
        cells = _winning_set(row)
        for line in LINES:
            if not cells & set(line.cells):
                values = [int(row[c]) for c in line.cells]
                add("line_three", w, max(values.count(v) for v in values) == 3, 1)
        seen: set[int] = set()
        three = False
        for p in range(16):
            if p in seen:
                continue
            group, todo = {p}, [p]
            while todo:
                q = todo.pop()
                for r in bonus_neighbours(q):
                    if r not in group and row[BONUS_CELLS[r]] == row[BONUS_CELLS[p]]:
                        group.add(r)
                        todo.append(r)
            seen |= group
            three |= len(group) == 3 and row[BONUS_CELLS[p]] != scarab
        add("bonus_three", w, three, 1)
        won_bonus = {p for p in range(16) if BONUS_CELLS[p] in cells}
        away = {
            p for p in range(16) if p not in won_bonus and not won_bonus & set(bonus_neighbours(p))
        }
        for p in away:
            for q in bonus_neighbours(p):
                if q > p and q in away:
                    add("contact", w, row[BONUS_CELLS[p]] == row[BONUS_CELLS[q]], 1)
        for g in range(4):
            free = [c for c in range(16 * g, 16 * g + 16) if c not in cells]
            for s, code in enumerate(rules().symbol_codes):
                add(f"symbols_grid{g + 1}_{code}", w, sum(row[c] == s for c in free), len(free))
    return {
        name: (100 * t[0][0] / max(1, t[0][1]), 100 * t[1][0] / max(1, t[1][1]))
        for name, t in tally.items()
    }


def test_the_measures_are_those_written_out_cell_by_cell(small_block: Block) -> None:
    winning = small_block.lots_cents > 0
    want = _reference(small_block.units, winning)
    got = {m.name: (m.losing_pct, m.winning_pct) for m in look_alike(small_block.units, winning)}
    assert got.keys() == want.keys()
    for name, (losing, won) in want.items():
        assert got[name] == pytest.approx((losing, won), abs=1e-9), name


def test_three_in_contact_counts_groups_of_exactly_three_but_scarabs() -> None:
    # Every bonus cell its own symbol's "checkerboard" of P and Y: no two alike in contact.
    unit = np.zeros(64, dtype=np.int8)
    for p, c in enumerate(BONUS_CELLS):
        unit[c] = (p // 4 + p % 4) % 2  # 0 = P, 1 = Y
    units = np.stack([unit, unit, unit, unit])
    row0 = [BONUS_CELLS[p] for p in (0, 1, 2)]  # the bonus grid's first row, three cells
    units[1, row0] = 3  # X X X: a three
    units[2, row0] = 5  # S S S: scarabs, no near-miss
    units[3, row0[:2]] = 3  # X X: a two only
    winning = np.array([False, False, False, True])
    shares = {m.name: m for m in look_alike(units, winning)}
    assert shares["bonus_three"].losing_pct == pytest.approx(100 / 3)
    assert shares["bonus_three"].winning_pct == 0.0


def test_runs_and_serial_tests_see_patterns_and_pass_shuffles() -> None:
    rng = np.random.default_rng(5)  # a fixed seed: a reproducible test
    fair = rng.random(20_000) < 0.25
    assert runs_p(fair) > 0.01
    assert serial_correlation_p(fair.astype(np.float64), 1) > 0.01
    bunched = np.sort(fair)
    assert runs_p(bunched) < 1e-6
    cycle = np.zeros(20_000, dtype=np.bool_)
    cycle[::4] = True
    assert serial_correlation_p(cycle.astype(np.float64), 4) < 1e-6
    lots = np.where(bunched, 100, 0).astype(np.int64)
    tests = order_tests(bunched, lots)
    assert len(tests) == ORDER_TESTS
    assert not all(t.passed for t in tests)
    assert all(t.passed for t in order_tests(fair, np.where(fair, 100, 0).astype(np.int64)))


def test_a_block_whose_order_tests_fail_still_looks_alike(small_block: Block) -> None:
    bunched = np.argsort(small_block.lots_cents == 0, kind="stable")  # the winners first
    units, lots = small_block.units[bunched], small_block.lots_cents[bunched]
    judged, fair = fairness(units, lots), fairness(small_block.units, small_block.lots_cents)
    assert [m.gap_pp for m in judged.measures] == [m.gap_pp for m in fair.measures]
    assert judged.alike == fair.alike
    assert not judged.ok
    assert judged.as_json()["order_test_level"] == pytest.approx(0.01 / ORDER_TESTS)
