"""docs/screenshots.md shows only pictures that are there, and every picture there is shown."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).parents[1] / "docs"


def test_every_screenshot_shown_is_there_and_every_one_there_is_shown() -> None:
    page = (DOCS / "screenshots.md").read_text("utf-8")
    shown = set(re.findall(r"\]\((screenshots/[^)]+\.png)\)", page))
    there = {f"screenshots/{p.name}" for p in (DOCS / "screenshots").glob("*.png")}
    assert shown
    assert shown == there, (shown - there, there - shown)
