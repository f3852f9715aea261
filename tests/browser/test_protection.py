"""The player's protection on the page: the reality check, every N minutes of a session, with
the session's net result; its interval reached with Playwright's clock, not by waiting."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from pharaon.game.money import format_cents
from tests.browser.helpers import (
    api,
    choose_stake,
    deposit,
    press_buy,
    sign_up,
    tab,
    without_motion,
)

pytestmark = pytest.mark.browser


def test_the_reality_check_shows_the_session_so_far(page: Page) -> None:
    page.clock.install()  # time still flows; fast_forward jumps the page's timers ahead
    without_motion(page)  # the plays' lots, not their animations
    page.reload()
    sign_up(page)
    deposit(page, "10")
    tab(page, "Compte")
    page.select_option("#reality-minutes", "15")
    page.locator("#reality-submit").click()
    expect(page.locator("#message")).to_contain_text("Réglage du point sur le jeu enregistré")
    assert api(page, "/me")["reality_check_minutes"] == 15
    tab(page, "Jeu")
    choose_stake(page, 100)
    lots = [press_buy(page, "Auto")["prize_cents"] for _ in range(3)]
    net = sum(lots) - 300
    dialog = page.locator("#reality-dialog")
    expect(dialog).to_be_hidden()
    page.clock.fast_forward("14:00")
    expect(dialog).to_be_hidden()
    page.clock.fast_forward("01:30")
    expect(dialog).to_be_visible()
    expect(page.locator("#reality-net")).to_contain_text(
        f"Résultat net de la session : {format_cents(net)}"
    )
    expect(page.locator("#reality-time")).to_contain_text("Vous jouez depuis")
    page.get_by_role("button", name="Continuer", exact=True).click()
    expect(dialog).to_be_hidden()
    # The next check is set once the server has said how long the session has run.
    expect(dialog).to_have_attribute("data-due-in-seconds", re.compile(r"^\d+$"))
    # The next one, 15 minutes on; « Se déconnecter » there ends the session.
    page.clock.fast_forward("15:30")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Se déconnecter").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#login-form")).to_be_visible()
    assert page.request.get("/api/v1/me").status == 401
