from __future__ import annotations

import numpy as np
import pytest

from pharaon.game.unit import (
    TicketError,
    Unit,
    array_to_tickets,
    format_ticket,
    parse_ticket,
    tickets_to_array,
)
from tests.game.helpers import BACKGROUND

TICKET = "PYOXJSPYOXJSPYOX-SSSSPPPPYYYYOOOO-XXXXJJJJSSSSPPPP-PYOXPYOXPYOXPYOX"


def test_round_trip() -> None:
    unit = parse_ticket(TICKET)
    assert unit.cells[:6] == (0, 1, 2, 3, 4, 5)
    assert unit.cells[16:20] == (5, 5, 5, 5)
    assert format_ticket(unit) == TICKET
    assert Unit.from_array(unit.to_array()).ticket == TICKET


def test_grid_codes_are_row_by_row() -> None:
    assert parse_ticket(TICKET).grid_codes(2) == "XXXXJJJJSSSSPPPP"


def test_wrong_length() -> None:
    with pytest.raises(TicketError, match=r"a ticket has 67 characters .* got 66"):
        parse_ticket(TICKET[:-1])


def test_missing_separator_names_its_position() -> None:
    bad = TICKET[:33] + "P" + TICKET[34:]
    with pytest.raises(TicketError, match="expected '-' at position 34 after grid 2, got 'P'"):
        parse_ticket(bad)


def test_unknown_symbol_names_position_grid_row_and_column() -> None:
    bad = TICKET[:22] + "Q" + TICKET[23:]
    # position 23 is grid 2's 6th cell: row 2, column 2
    with pytest.raises(TicketError, match=r"unknown symbol 'Q' at position 23 \(grid 2, row 2"):
        parse_ticket(bad)


def test_lower_case_is_not_a_symbol() -> None:
    with pytest.raises(TicketError, match="unknown symbol 'p' at position 1"):
        parse_ticket("p" + TICKET[1:])


def test_a_unit_checks_its_cells() -> None:
    with pytest.raises(ValueError, match="a unit has 64 cells, got 3"):
        Unit((0, 1, 2))
    with pytest.raises(ValueError, match=r"cell 5: symbol index must be 0\.\.5, got 6"):
        Unit((0,) * 5 + (6,) + (0,) * 58)


def test_arrays_and_tickets_convert_both_ways() -> None:
    tickets = [TICKET, BACKGROUND]
    units = tickets_to_array(tickets)
    assert units.shape == (2, 64)
    assert units.dtype == np.int8
    assert array_to_tickets(units) == tickets
