"""Property tests of tickets: any unit survives ticket -> parse, singly and in arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pharaon.game.board import GRID_CELLS, GRIDS, UNIT_CELLS
from pharaon.game.rules import rules
from pharaon.game.unit import (
    SEPARATOR,
    TicketError,
    Unit,
    array_to_tickets,
    parse_ticket,
    tickets_to_array,
)

SYMBOLS = len(rules().symbols)
units = st.lists(
    st.integers(min_value=0, max_value=SYMBOLS - 1), min_size=UNIT_CELLS, max_size=UNIT_CELLS
).map(lambda cells: Unit(tuple(cells)))


@given(units)
def test_any_unit_round_trips_through_its_ticket(unit: Unit) -> None:
    ticket = unit.ticket
    grids = ticket.split(SEPARATOR)
    assert len(grids) == GRIDS
    assert all(len(g) == GRID_CELLS for g in grids)
    assert grids == [unit.grid_codes(g) for g in range(GRIDS)]
    assert parse_ticket(ticket) == unit
    assert Unit.from_array(unit.to_array()) == unit


@given(st.lists(units, max_size=20))
def test_any_units_round_trip_through_arrays(found: list[Unit]) -> None:
    tickets = [u.ticket for u in found]
    array = tickets_to_array(tickets)
    assert array.shape == (len(found), UNIT_CELLS)
    assert np.array_equal(array, np.array([u.cells for u in found], dtype=np.int8).reshape(-1, 64))
    assert array_to_tickets(array) == tickets


@given(units, st.data())
def test_a_ticket_with_any_foreign_character_is_refused(unit: Unit, data: st.DataObject) -> None:
    ticket = unit.ticket
    position = data.draw(st.integers(min_value=0, max_value=len(ticket) - 1))
    allowed = rules().symbol_codes if ticket[position] != SEPARATOR else SEPARATOR
    char = data.draw(st.characters(exclude_characters=allowed))
    with pytest.raises(TicketError, match=rf"position {position + 1}\b"):
        parse_ticket(ticket[:position] + char + ticket[position + 1 :])
