"""The logged-out page shows the game above the sign-up (issue 29, item 2): a sample board,
the top lots at each price and the odds of a lot, computed from rules.toml; in French and in
English, and on a phone without sideways scrolling."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from pharaon.game.money import format_cents
from pharaon.game.rules import rules
from tests.browser.conftest import Server
from tests.browser.helpers import api, sign_up, tab

pytestmark = pytest.mark.browser


def _odds() -> float:
    game = rules()
    return game.block_size / game.winning_units


def test_the_logged_out_page_shows_the_game_first(page: Page) -> None:
    landing = page.locator("#landing")
    expect(landing).to_be_visible()
    # Above the forms.
    top = landing.bounding_box()
    form = page.locator("#signup-form").bounding_box()
    assert top is not None
    assert form is not None
    assert top["y"] + top["height"] <= form["y"] + 1
    odds = f"{_odds():.2f}"
    assert odds == "3.91"  # 1,000,000 units, 255,505 lots (docs/rules.md)
    expect(page.locator("#landing-odds")).to_have_text(
        f"1 chance sur {odds.replace('.', ',')} de gagner un lot, à chaque prix."
    )
    game = rules()
    largest = max(p.amount_cents for p in game.prizes)
    items = page.locator("#landing-top li")
    expect(items).to_have_count(len(game.prices_cents))
    for index, price in enumerate(game.prices_cents):
        expect(items.nth(index).locator("strong")).to_have_text(
            format_cents(largest * price // 100)
        )
    board = page.locator("#landing-board .sample-grid .cell")
    expect(board).to_have_count(16)
    # A winning line is four of a kind (docs/rules.md): the sample's second row.
    expect(page.locator("#landing-board .sample-grid .cell.win")).to_have_count(4)
    expect(page.locator("#landing-board .note")).to_contain_text("quatre pyramides alignées")
    expect(page.locator("#landing-board .cell svg").first).to_be_visible()

    page.locator("#lang").click()
    expect(page.locator("#landing-odds")).to_have_text(
        f"1 chance in {odds} of winning a prize, at every price."
    )
    expect(page.locator("#landing-title")).to_have_text(
        "Pharaon, the scratch game of ancient Egypt"
    )
    page.locator("#lang").click()


def test_the_landing_fits_a_phone(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=server.url)
    try:
        phone = context.new_page()
        phone.goto("/")
        expect(phone.locator("#landing-odds")).to_contain_text("1 chance sur")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        box = phone.locator("#landing-board .sample-grid").bounding_box()
        assert box is not None
        assert 0 <= box["x"] <= box["x"] + box["width"] <= 390
    finally:
        context.close()


def test_a_player_finds_the_odds_in_the_rules(page: Page) -> None:
    """Logged in, the landing is gone: « Infos » says the same odds under the rules."""
    sign_up(page)
    tab(page, "Infos")
    odds = f"{_odds():.2f}".replace(".", ",")
    expect(page.locator("#rules-odds")).to_have_text(
        f"1 chance sur {odds} de gagner un lot, à chaque prix."
    )
    expect(page.locator("#landing")).to_be_hidden()


def test_the_bonus_shapes_are_drawn(page: Page) -> None:
    """« Infos » draws the seven shapes four cells in contact make in the bonus (the
    server's: GET /rules), each its four cells filled, named by its letter."""
    page.locator("#tabs").get_by_role("button", name="Infos").click()
    shapes = page.locator("#bonus-shapes .shape")
    served = api(page, "/rules")["bonus_shapes"]
    expect(shapes).to_have_count(len(served))
    assert len(served) == 7
    for index, shape in enumerate(served):
        drawn = shapes.nth(index)
        expect(drawn.locator(".shape-name")).to_have_text(shape["name"])
        expect(drawn.locator(".on")).to_have_count(4)
        on = drawn.locator(".shape-cells span").evaluate_all(
            "cells => cells.map((c) => c.classList.contains('on'))"
        )
        columns = max(c for _, c in shape["cells"])
        filled = {(k // columns + 1, k % columns + 1) for k, lit in enumerate(on) if lit}
        assert filled == {tuple(cell) for cell in shape["cells"]}, shape["name"]
        box = drawn.locator(".on").first.bounding_box()
        assert box is not None
        assert box["width"] >= 12
    expect(page.locator("#bonus-shapes figcaption")).to_contain_text("Quatre cases en contact")
