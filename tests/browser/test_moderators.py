"""The moderators in Chromium: a new account opens on their form under « Compte », a deposit
or a stake before them is turned into that form, the page refuses to send them empty, and once
set the player deposits and plays, up to the stake ceiling set beside them; in English too."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from pharaon.game.money import format_cents
from tests.browser.helpers import (
    api,
    choose_stake,
    deposit,
    is_buy,
    set_moderators,
    sign_up,
    tab,
    without_motion,
)

pytestmark = pytest.mark.browser


def test_a_new_account_sets_its_moderators_before_the_first_deposit(page: Page) -> None:
    without_motion(page)  # the plays up to the ceiling, not their animations
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


def _save_limits(page: Page) -> Any:
    """Press « Enregistrer les limites »; the body the page sent with PUT /me/limits."""
    with page.expect_request(lambda r: r.method == "PUT" and r.url.endswith("/me/limits")) as put:
        page.locator("#limits-submit").click()
    expect(page.locator("#message")).to_contain_text("Limites enregistrées")
    return put.value.post_data_json


def test_the_form_sends_only_the_limits_changed_and_a_raise_stays(page: Page) -> None:
    """Issue 37: the weekly deposit ceiling raised from 100 EUR to 200 EUR (waiting 48 hours),
    then the weekly stake ceiling lowered in the same form: the page sends that one alone, and
    the raise still waits."""
    sign_up(page, moderators=("100", "100"))
    tab(page, "Compte")
    page.fill("#limit-weekly", "200")
    assert _save_limits(page) == {"weekly_cents": 20_000}
    pending = page.locator("#limits-pending")
    expect(pending).to_contain_text(f"par semaine : {format_cents(20_000)}")
    expect(page.locator("#limit-weekly")).to_have_value("100,00")  # in force until then
    page.fill("#limit-stake_weekly", "50")
    assert _save_limits(page) == {"stake_weekly_cents": 5_000}
    limits = api(page, "/me")["limits"]
    assert (limits["weekly_cents"], limits["stake_weekly_cents"]) == (10_000, 5_000)
    assert [(p["period"], p["amount_cents"]) for p in limits["pending"]] == [("weekly", 20_000)]
    expect(pending).to_contain_text(f"par semaine : {format_cents(20_000)}")
    # A limit emptied is sent as null (no limit: a removal waits too); one retyped as it is
    # in force, not at all.
    page.fill("#limit-daily", "30")
    assert _save_limits(page) == {"daily_cents": 3_000}
    page.fill("#limit-daily", "")
    page.fill("#limit-weekly", "100")
    assert _save_limits(page) == {"daily_cents": None}
    limits = api(page, "/me")["limits"]
    assert {p["period"]: p["amount_cents"] for p in limits["pending"]} == {
        "weekly": 20_000,
        "daily": None,
    }
    # Lowering the weekly ceiling itself is what ends its raise.
    page.fill("#limit-weekly", "80")
    assert _save_limits(page) == {"weekly_cents": 8_000}
    expect(pending).not_to_contain_text("par semaine :")
    assert api(page, "/me")["limits"]["weekly_cents"] == 8_000


def test_the_moderators_form_in_english(page: Page) -> None:
    sign_up(page, moderators=None)
    page.locator("#lang").click()
    expect(page.locator("#moderators-needed")).to_contain_text("set your moderators")
    expect(page.locator("label[for=limit-stake_weekly]")).to_have_text(
        "Per week (moderator, required)"
    )
    expect(page.locator("#limits-form h2")).to_have_text("Moderators and limits")
