"""How a play is uncovered: « Jouer » (the player scratches the four grids one by one) or
« Auto » (everything at once) (docs/rules.md)."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """A play's mode; its value is what the API, the database and the page say."""

    JOUER = "jouer"
    AUTO = "auto"
