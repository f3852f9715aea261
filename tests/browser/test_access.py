"""Keyboard-only play, text alternatives, phone-to-desktop layout, and the screenshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from pharaon.game.money import format_cents
from tests.browser.conftest import Server
from tests.browser.helpers import (
    api,
    check_finished,
    choose_stake,
    deposit,
    press_buy,
    settled,
    sign_up,
    tab,
    uncover,
    without_motion,
)

pytestmark = pytest.mark.browser

MAX_TABS = 60
VIEWPORTS = [(390, 844), (1280, 800)]


def tab_to(page: Page, selector: str) -> None:
    """Press Tab until the element matching `selector` has the focus."""
    for _ in range(MAX_TABS):
        if page.evaluate("s => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press("Tab")
    pytest.fail(f"{selector} cannot be reached with Tab")


def test_keyboard_only_play(page: Page) -> None:
    sign_up(page)  # typed into the form; everything after is keys only
    tab_to(page, '#tabs button[data-view="account"]')
    page.keyboard.press("Enter")
    expect(page.locator("#view-account")).to_be_visible()
    tab_to(page, "#deposit-amount")
    page.keyboard.type("10,50")
    page.keyboard.press("Enter")
    expect(page.locator("#message")).to_contain_text("Dépôt de 10,50 €")
    expect(page.locator("#balance")).to_have_text(format_cents(1050))

    tab_to(page, '#tabs button[data-view="game"]')
    page.keyboard.press("Enter")
    tab_to(page, 'input[name="stake"]')
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stake-200")).to_be_checked()
    tab_to(page, "#jouer")
    with page.expect_response(lambda r: r.url.endswith("/api/v1/plays")) as answer:
        page.keyboard.press("Enter")
    play_id = answer.value.json()["play_id"]
    for grid in (1, 2, 3, 4):
        button = page.get_by_role("button", name=f"Grille {grid}", exact=True)
        expect(button).to_be_focused()  # the focus walks from one covered grid to the next
        page.keyboard.press("Enter" if grid % 2 else "Space")
        expect(
            page.locator("#play-holder").get_by_role("group", name=f"Grille {grid}")
        ).to_be_visible()
    play = api(page, f"/plays/{play_id}")
    assert play["stake_cents"] == 200
    check_finished(page, play)
    expect(page.locator("#play-holder .lot")).to_be_focused()

    tab_to(page, '#tabs button[data-view="history"]')
    page.keyboard.press("Enter")
    view = page.get_by_role("button", name=f"Voir la partie n° {play_id}")
    expect(view).to_be_visible()
    tab_to(page, f'#history-rows tr[data-play-id="{play_id}"] button')
    page.keyboard.press("Enter")
    expect(page.locator("#history-detail .detail-head h3")).to_be_focused()
    check_finished(page, play, "#history-detail")

    tab_to(page, "#lang")
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("lang", "en")


def test_symbols_have_text_alternatives(page: Page, server: Server) -> None:
    sign_up(page)
    deposit(page, "1")
    tab(page, "Jeu")
    play = press_buy(page, "Auto")
    names = {s["code"]: s["name"] for s in server.api("/rules")["symbols"]}
    cells = page.locator("#play-holder .board .cell")
    expect(cells).to_have_count(64)
    shown = "".join(play["grids"])
    for i in range(64):
        label = cells.nth(i).get_attribute("aria-label") or ""
        assert cells.nth(i).get_attribute("role") == "img"
        assert label.startswith(names[shown[i]]), (i, label)
    expect(page.locator("#play-holder .bonus-grid .cell")).to_have_count(16)


def test_information_comes_from_the_api(page: Page, server: Server) -> None:
    tab(page, "Infos")  # readable logged out too
    rules = server.api("/rules")
    expect(page.locator("#symbols-table tbody tr")).to_have_count(len(rules["symbols"]))
    expect(page.locator("#prizes-table tbody tr")).to_have_count(len(rules["prizes"]))
    top = rules["prizes"][0]["amount_cents"]
    expect(page.locator("#prizes-table tbody tr").first).to_contain_text(format_cents(top * 3))
    for price in rules["prices_cents"]:
        remaining = server.api(f"/prizes/remaining?stake_cents={price}")
        table = page.locator("#remaining-tables table").filter(has_text=f"Mise {price // 100} €")
        rows = table.locator("tbody tr")
        expect(rows).to_have_count(len(remaining))
        for row, prize in zip(rows.all(), remaining, strict=True):
            expect(row.locator("th")).to_have_text(format_cents(prize["prize_cents"]))
            expect(row.locator("td")).to_have_text(f"{prize['remaining']:,}".replace(",", "\u202f"))
    expect(page.locator("#rules-text")).to_contain_text("Énigme bonus")
    # The stakes the rules text names are the prices served, in either language.
    rules_text = page.locator("#rules-text")
    expect(rules_text).to_contain_text(f"multipliée par la mise ({_said(rules, 'ou')})")
    page.get_by_role("button", name="English").click()
    expect(rules_text).to_contain_text(f"times the stake ({_said(rules, 'or')})")
    # Other prices served, other prices named: the text holds no copy of them.
    other = {**rules, "prices_cents": [100, 500]}
    page.route("**/api/v1/rules", lambda route: route.fulfill(json=other))
    page.reload()
    tab(page, "Info")
    expect(rules_text).to_contain_text("times the stake (1 € or 5 €)")


def _said(rules: dict[str, Any], word: str) -> str:
    """The rules' prices as the page says them: "1 €, 2 € ou 3 €"."""
    euros = [f"{cents // 100} €" for cents in rules["prices_cents"]]
    return f"{', '.join(euros[:-1])} {word} {euros[-1]}"


@pytest.mark.parametrize(("width", "height"), [*VIEWPORTS, (360, 740)])
def test_screens_at_phone_and_desktop_sizes(
    browser: Browser, server: Server, screenshots: Path, width: int, height: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=server.url)
    page = context.new_page()
    # The layout and the pictures, not the animations (test_scratch.py): each step at once.
    without_motion(page)
    keep = (width, height) in VIEWPORTS
    size = f"{width}x{height}"

    def shot(name: str) -> None:
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{name} at {size}: the page is {wide} px wide"
        if keep:
            page.screenshot(path=str(screenshots / f"{size}-{name}.png"), full_page=True)

    try:
        page.goto("/")
        expect(page.locator("#view-auth")).to_be_visible()
        shot("1-sign-up")
        sign_up(page)
        deposit(page, "30")
        shot("2-account")
        tab(page, "Jeu")
        choose_stake(page, 100)
        bought = press_buy(page, "Jouer")
        shot("3-covered")
        uncover(page, 1)
        uncover(page, 2)
        settled(page)
        shot("4-half")
        uncover(page, 3)
        uncover(page, 4)
        check_finished(page, api(page, f"/plays/{bought['play_id']}"))
        settled(page)
        shot("5-finished")
        for _ in range(5):
            press_buy(page, "Auto")
            expect(page.locator("#play-holder .lot")).to_be_visible()
        tab(page, "Historique")
        expect(page.locator("#history-rows tr")).to_have_count(6)
        page.get_by_role("button", name=f"Voir la partie n° {bought['play_id']}").click()
        shot("6-history")
        tab(page, "Infos")
        expect(page.locator("#remaining-tables table")).to_have_count(3)
        shot("7-info")
        page.get_by_role("button", name="English").click()
        tab(page, "Game")
        shot("8-english")
    finally:
        context.close()
