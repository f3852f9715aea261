"""What one unit wins: its winning combinations, with their cells, and its lot.

This is the readable evaluator, the reference the batch evaluator (batch.py) is tested against;
the server and the page use it to mark winning cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Final, Literal

from pharaon.game.board import BONUS_CELLS, LINES, TETROMINOES, bonus_neighbours, cell_position
from pharaon.game.rules import rules
from pharaon.game.unit import Unit

Kind = Literal["line", "bonus"]
Cell = tuple[int, int, int]  # (grid, row, column), numbered from 1

WINNING_GROUP = 4  # a same-symbol bonus group of a tetromino's 4 cells wins
MIN_BAD_GROUP = 5  # a same-symbol bonus group this large makes the unit ambiguous


class MalformedUnitError(ValueError):
    """A unit no block may hold: a bonus group of 5 or more cells of one symbol."""


@dataclass(frozen=True, slots=True)
class Combination:
    """A winning combination: a full line in a grid, or a 4-cell group in the bonus grid."""

    kind: Kind
    symbol: str  # one-letter code
    grid: int | None  # 1..4 for a line, None for a bonus group
    cells: tuple[Cell, ...]
    gain_cents: int  # at the unit's stake
    label: str  # "row 2", "column 1", "diagonal", "anti-diagonal" or the tetromino "T"

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "symbol": self.symbol,
            "grid": self.grid,
            "cells": [list(c) for c in self.cells],
            "gain_cents": self.gain_cents,
        }


@dataclass(frozen=True, slots=True)
class Evaluation:
    stake_cents: int
    combinations: tuple[Combination, ...]

    @property
    def prize_cents(self) -> int:
        """The unit's lot: the sum of its combinations' gains (art. 4.3.2, 4.5)."""
        return sum(c.gain_cents for c in self.combinations)

    def as_json(self) -> dict[str, Any]:
        return {
            "prize_cents": self.prize_cents,
            "combinations": [c.as_json() for c in self.combinations],
        }


_SHAPES: Final = {p.positions: p.shape for p in TETROMINOES}
# Each line with a getter of its four cells' symbols (looked up once, not per evaluation).
_LINE_GETTERS: Final = tuple((line, itemgetter(*line.cells)) for line in LINES)
_BONUS_GETTER: Final = itemgetter(*BONUS_CELLS)


def _shown(index: int) -> Cell:
    g, r, c = cell_position(index)
    return g + 1, r + 1, c + 1


def _line_label(kind: str, number: int) -> str:
    return f"{kind} {number + 1}" if kind in ("row", "column") else kind


def large_bonus_groups(unit: Unit) -> list[tuple[int, tuple[int, ...]]]:
    """The connected same-symbol groups of :data:`WINNING_GROUP` cells or more in the bonus
    grid, the only ones that win or make a unit malformed: (symbol index, sorted positions)."""
    symbols = _BONUS_GETTER(unit.cells)
    # Only a symbol on that many cells or more can form one: the others are not explored.
    crowded = {s for s in set(symbols) if symbols.count(s) >= WINNING_GROUP}
    seen: set[int] = set()
    groups = []
    for start, symbol in enumerate(symbols):
        if symbol not in crowded or start in seen:
            continue
        group, todo = {start}, [start]
        while todo:
            for n in bonus_neighbours(todo.pop()):
                if n not in group and symbols[n] == symbol:
                    group.add(n)
                    todo.append(n)
        seen |= group
        if len(group) >= WINNING_GROUP:
            groups.append((symbol, tuple(sorted(group))))
    return groups


def evaluate(unit: Unit, stake_cents: int = 100) -> Evaluation:
    """The combinations and lot of ``unit`` at ``stake_cents``; raises MalformedUnitError."""
    game = rules()
    k = game.multiplier(stake_cents)
    combinations: list[Combination] = []
    for line, getter in _LINE_GETTERS:
        first, second, third, fourth = getter(unit.cells)
        if first == second == third == fourth:
            symbol = game.symbols[first]
            combinations.append(
                Combination(
                    kind="line",
                    symbol=symbol.code,
                    grid=line.grid + 1,
                    cells=tuple(_shown(i) for i in line.cells),
                    gain_cents=symbol.line_cents * k,
                    label=_line_label(line.kind, line.number),
                )
            )
    for index, positions in large_bonus_groups(unit):
        symbol = game.symbols[index]
        if len(positions) >= MIN_BAD_GROUP:
            where = ", ".join(str(_shown(BONUS_CELLS[p])) for p in positions)
            raise MalformedUnitError(
                f"malformed unit: the bonus grid holds a group of {len(positions)} "
                f"{symbol.code} cells (at most 4 allowed): {where}"
            )
        # WINNING_GROUP, written as a literal so that mypy knows the tuple's length.
        if len(positions) == 4 and symbol.bonus_cents is not None:
            combinations.append(
                Combination(
                    kind="bonus",
                    symbol=symbol.code,
                    grid=None,
                    cells=tuple(_shown(BONUS_CELLS[p]) for p in positions),
                    gain_cents=symbol.bonus_cents * k,
                    label=_SHAPES[positions],
                )
            )
    return Evaluation(stake_cents, tuple(combinations))
