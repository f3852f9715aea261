from __future__ import annotations

import pytest

from pharaon.game.money import format_cents


@pytest.mark.parametrize(
    ("cents", "text"),
    [
        (150, "1,50 €"),
        (0, "0,00 €"),
        (5, "0,05 €"),
        (2_500_000, "25\u202f000,00 €"),
        (-100, "-1,00 €"),
    ],
)
def test_french_amounts(cents: int, text: str) -> None:
    assert format_cents(cents) == text
