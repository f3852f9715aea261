"""The page's money module says amounts exactly as the server's format_cents does."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from pharaon.game.money import format_cents

pytestmark = pytest.mark.browser

AMOUNTS = [0, 1, 9, 50, 99, 100, 150, 999, 1000, 2000, 99_999, 100_000, 2_500_000, 7_500_000]
AMOUNTS += [100_000_000, 123_456_789, -150, -2_500_000]

TYPED = {
    "10": 1000,
    "10,5": 1050,
    "10.50": 1050,
    "0,01": 1,
    "1 000,00": 100_000,
    "25\u202f000,00 €": 2_500_000,
    " 7 ": 700,
    "": None,
    "dix": None,
    "1,234": None,
    "-5": None,
    "1e3": None,
    "10,": None,
}


def _module(page: Page, call: str, values: object) -> object:
    return page.evaluate(
        f"async values => {{ const m = await import('/static/js/money.js');"
        f" return values.map(v => {call}); }}",
        values,
    )


def test_format_cents_matches_the_server(page: Page) -> None:
    shown = _module(page, "m.formatCents(v)", AMOUNTS)
    assert shown == [format_cents(a) for a in AMOUNTS]


def test_typed_euros_become_cents(page: Page) -> None:
    typed = list(TYPED)
    assert _module(page, "m.parseEuros(v)", typed) == [TYPED[t] for t in typed]
