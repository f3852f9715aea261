"""The moderators in Chromium: a new account opens on their form under « Compte », a deposit
or a stake before them is turned into that form, the page refuses to send them empty, and once
set the player deposits and plays, up to the stake ceiling set beside them; in English too."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    api,
    choose_stake,
    deposit,
    is_buy,
    set_moderators,
    sign_up,
    tab,
)

pytestmark = pytest.mark.browser


def test_a_new_account_sets_its_moderators_before_the_first_deposit(page: Page) -> None:
    sign_up(page, moderators=None)
    # The page opens « Compte » on the form, not the game.
    expect(page.locator("#view-account")).to_be_visible()
    expect(page.locator("#moderators-needed")).to_contain_text("fixez vos modérateurs")
    assert api(page, "/me")["limits"]["moderators_set"] is False
    # A deposit asked anyway: refused by the server, the form shown again, its field focused.
    deposit(page, "10", expect_ok=False)
    expect(page.locator("#message")).to_contain_text("Fixez d'abord vos modérateurs")
    expect(page.locator("#limit-weekly")).to_be_focused()
    assert api(page, "/me")["balance_cents"] == 0
    # One moderator alone: the page does not send it.
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "PUT" else None)
    page.fill("#limit-weekly", "100")
    page.locator("#limits-submit").click()
    expect(page.locator("#message")).to_contain_text("fixez vos modérateurs")
    expect(page.locator("#limit-stake_weekly")).to_be_focused()
    assert sent == []
    set_moderators(page, "100", "2")
    limits = api(page, "/me")["limits"]
    assert (limits["weekly_cents"], limits["stake_weekly_cents"]) == (10_000, 200)
    assert limits["moderators_set"] is True
    deposit(page, "10")
    assert api(page, "/me")["balance_cents"] == 1_000
    # The stake ceiling holds: two plays of 1 €, the third refused with its reason.
    tab(page, "Jeu")
    choose_stake(page, 100)
    for _ in range(2):
        press = page.get_by_role("button", name="Auto", exact=True)
        expect(press).not_to_have_attribute("aria-disabled", "true")
        with page.expect_response(is_buy) as answer:
            press.click()
        assert answer.value.status == 201, answer.value.text()
    press = page.get_by_role("button", name="Auto", exact=True)
    expect(press).not_to_have_attribute("aria-disabled", "true")
    with page.expect_response(is_buy) as refused:
        press.click()
    assert refused.value.status == 403
    assert refused.value.json()["error"] == "stake_limit"
    expect(page.locator("#message")).to_contain_text("Limite de mises atteinte")


def test_the_moderators_form_in_english(page: Page) -> None:
    sign_up(page, moderators=None)
    page.locator("#lang").click()
    expect(page.locator("#moderators-needed")).to_contain_text("set your moderators")
    expect(page.locator("label[for=limit-stake_weekly]")).to_have_text(
        "Per week (moderator, required)"
    )
    expect(page.locator("#limits-form h2")).to_have_text("Moderators and limits")
