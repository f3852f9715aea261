"""Examples worked out by hand from docs/rules.md §3 on the background of helpers.py."""

from __future__ import annotations

import pytest

from pharaon.game.board import TETROMINOES
from pharaon.game.evaluate import Combination, MalformedUnitError, evaluate
from pharaon.game.rules import rules
from pharaon.game.unit import parse_ticket
from tests.game.helpers import BACKGROUND, BONUS_AT, bonus_lab, with_bonus, with_cells


def _only(unit_combinations: tuple[Combination, ...]) -> Combination:
    assert len(unit_combinations) == 1, unit_combinations
    return unit_combinations[0]


def test_the_background_wins_nothing() -> None:
    result = evaluate(parse_ticket(BACKGROUND))
    assert result.combinations == ()
    assert result.prize_cents == 0


@pytest.mark.parametrize(
    ("code", "cents"),
    [("P", 2_500_000), ("Y", 50_000), ("O", 1_000), ("X", 500), ("J", 100), ("S", 50)],
)
def test_a_row_of_each_symbol(code: str, cents: int) -> None:
    unit = with_cells({(1, 1, c): code for c in range(1, 5)})
    line = _only(evaluate(unit).combinations)
    assert (line.kind, line.symbol, line.grid, line.label) == ("line", code, 1, "row 1")
    assert line.cells == ((1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 1, 4))
    assert line.gain_cents == cents
    assert evaluate(unit).prize_cents == cents


def test_a_column() -> None:
    # Grid 2, column 4 is X Y S X: make it all pyramids.
    unit = with_cells({(2, r, 4): "Y" for r in range(1, 5)})
    line = _only(evaluate(unit).combinations)
    assert (line.symbol, line.grid, line.label, line.gain_cents) == ("Y", 2, "column 4", 50_000)
    assert line.cells == ((2, 1, 4), (2, 2, 4), (2, 3, 4), (2, 4, 4))


def test_the_diagonal() -> None:
    # Grid 4's diagonal P S J X becomes J J J J; two of its cells are in the bonus grid, where
    # they make a J group of only 3 cells with the J already there: no bonus.
    unit = with_cells({(4, i, i): "J" for i in range(1, 5)})
    line = _only(evaluate(unit).combinations)
    assert (line.symbol, line.grid, line.label, line.gain_cents) == ("J", 4, "diagonal", 100)
    assert line.cells == ((4, 1, 1), (4, 2, 2), (4, 3, 3), (4, 4, 4))


def test_the_anti_diagonal() -> None:
    unit = with_cells({(1, i, 5 - i): "O" for i in range(1, 5)})
    line = _only(evaluate(unit).combinations)
    assert (line.symbol, line.grid, line.label, line.gain_cents) == ("O", 1, "anti-diagonal", 1_000)
    assert line.cells == ((1, 1, 4), (1, 2, 3), (1, 3, 2), (1, 4, 1))


def test_crossing_lines_both_pay() -> None:
    # Grid 1: row 1 and column 1 all chacal, sharing the corner cell.
    changes = {(1, 1, c): "J" for c in range(1, 5)} | {(1, r, 1): "J" for r in range(1, 5)}
    result = evaluate(with_cells(changes))
    assert sorted(c.label for c in result.combinations) == ["column 1", "row 1"]
    assert result.prize_cents == 200
    assert evaluate(with_cells(changes), 300).prize_cents == 600


def test_lines_in_several_grids_add_up() -> None:
    changes = {(1, 1, c): "X" for c in range(1, 5)} | {(3, 4, c): "P" for c in range(1, 5)}
    result = evaluate(with_cells(changes))
    assert {(c.symbol, c.grid) for c in result.combinations} == {("X", 1), ("P", 3)}
    assert result.prize_cents == 2_500_500


def test_a_worked_ticket_with_a_bonus_across_three_grids() -> None:
    # Bonus grid of this ticket:   Y X X S / Y X J J / Y X Y X / P O P O
    # The X group (row 1 columns 2-3, then down column 2) takes cells of grids 1, 2 and 3.
    ticket = "JJJJSOYXPOYXSOYX-OYXSJJPOXSYOJJPO-SOYXJJPOXSYOPYOX-YXOSPOXSOYXJSPYO"
    result = evaluate(parse_ticket(ticket))
    assert result.as_json() == {
        "prize_cents": 1_100,
        "combinations": [
            {
                "kind": "line",
                "symbol": "J",
                "grid": 1,
                "cells": [[1, 1, 1], [1, 1, 2], [1, 1, 3], [1, 1, 4]],
                "gain_cents": 100,
            },
            {
                "kind": "bonus",
                "symbol": "X",
                "grid": None,
                "cells": [[1, 3, 4], [2, 3, 1], [1, 4, 4], [3, 1, 4]],
                "gain_cents": 1_000,
            },
        ],
    }


@pytest.mark.parametrize(
    ("shape", "cells"),
    [
        ("I", [(1, 1), (1, 2), (1, 3), (1, 4)]),  # the top row: grids 1 and 2
        ("I", [(1, 3), (2, 3), (3, 3), (4, 3)]),  # a column: grids 2 and 4
        ("O", [(2, 2), (2, 3), (3, 2), (3, 3)]),  # the centre: one cell of each grid
        ("T", [(2, 1), (2, 2), (2, 3), (3, 2)]),
        ("S", [(3, 2), (3, 3), (4, 1), (4, 2)]),
        ("Z", [(1, 1), (1, 2), (2, 2), (2, 3)]),
        ("J", [(1, 4), (2, 4), (3, 4), (3, 3)]),  # stem right, foot bottom left
        ("L", [(2, 1), (3, 1), (4, 1), (4, 2)]),  # stem left, foot bottom right
        ("O", [(3, 3), (3, 4), (4, 3), (4, 4)]),  # all in grid 4's square
    ],
)
def test_each_tetromino_shape_in_the_bonus(shape: str, cells: list[tuple[int, int]]) -> None:
    # A P/Y checkerboard around a J tetromino: no other group, and no line can form.
    unit = with_bonus(bonus_lab("P", "Y") | dict.fromkeys(cells, "J"))
    bonus = _only(evaluate(unit).combinations)
    assert (bonus.kind, bonus.symbol, bonus.grid, bonus.label) == ("bonus", "J", None, shape)
    assert sorted(bonus.cells) == sorted(BONUS_AT[rc] for rc in cells)
    assert bonus.gain_cents == 50_000
    assert evaluate(unit, 200).prize_cents == 100_000


@pytest.mark.parametrize("placement", TETROMINOES, ids=lambda p: f"{p.shape}{p.positions}")
def test_every_placement_pays_each_symbol_but_the_scarab(placement: object) -> None:
    positions = placement.positions  # type: ignore[attr-defined]
    cells = [(1 + p // 4, 1 + p % 4) for p in positions]
    for symbol in rules().symbols:
        others = [s.code for s in rules().symbols if s.code != symbol.code][:2]
        unit = with_bonus(bonus_lab(*others) | dict.fromkeys(cells, symbol.code))
        result = evaluate(unit)
        if symbol.bonus_cents is None:
            assert result.combinations == (), "a scarab group wins nothing"
        else:
            bonus = _only(result.combinations)
            assert bonus.symbol == symbol.code
            assert bonus.gain_cents == symbol.bonus_cents
            assert sorted(bonus.cells) == sorted(BONUS_AT[rc] for rc in cells)


def test_two_separate_groups_of_one_symbol_are_two_wins() -> None:
    left = [(1, 1), (2, 1), (3, 1), (4, 1)]
    right = [(1, 3), (1, 4), (2, 3), (2, 4)]
    unit = with_bonus(bonus_lab("P", "Y") | dict.fromkeys(left + right, "O"))
    result = evaluate(unit)
    assert sorted((c.symbol, c.label) for c in result.combinations) == [("O", "I"), ("O", "O")]
    assert result.prize_cents == 1_000


def test_lines_and_bonus_add_up_at_three_euros() -> None:
    # Grid 1 row 1 of croix (5 €) and a chacal square in the bonus (500 €): 505 € at 1 €.
    unit = with_bonus(
        bonus_lab("P", "Y") | dict.fromkeys([(3, 1), (3, 2), (4, 1), (4, 2)], "J"),
        base=with_cells({(1, 1, c): "X" for c in range(1, 5)}).ticket,
    )
    assert evaluate(unit).prize_cents == 50_500
    assert evaluate(unit, 300).prize_cents == 151_500


def test_a_group_of_five_is_refused() -> None:
    cells = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]
    unit = with_bonus(bonus_lab("P", "Y") | dict.fromkeys(cells, "X"))
    with pytest.raises(MalformedUnitError, match="group of 5 X cells"):
        evaluate(unit)


def test_a_scarab_group_of_five_is_refused_too() -> None:
    cells = [(2, 2), (2, 3), (3, 2), (3, 3), (4, 3)]
    unit = with_bonus(bonus_lab("P", "Y") | dict.fromkeys(cells, "S"))
    with pytest.raises(MalformedUnitError, match="group of 5 S cells"):
        evaluate(unit)


def test_a_whole_bonus_grid_of_one_symbol_is_refused() -> None:
    unit = with_bonus({(r, c): "Y" for r in range(1, 5) for c in range(1, 5)})
    with pytest.raises(MalformedUnitError, match="group of 16 Y cells"):
        evaluate(unit)


def test_an_unknown_stake_is_refused() -> None:
    with pytest.raises(ValueError, match="got 150"):
        evaluate(parse_ticket(BACKGROUND), 150)
