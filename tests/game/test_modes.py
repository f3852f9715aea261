from __future__ import annotations

import pytest

from pharaon.game.modes import Mode


def test_the_two_modes_are_the_page_s_words() -> None:
    assert [m.value for m in Mode] == ["jouer", "auto"]
    assert Mode("auto") is Mode.AUTO


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'scratch' is not a valid Mode"):
        Mode("scratch")
