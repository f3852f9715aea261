"""A French account's whole life on the page, in Chromium (issue 27's "done when"): sign up, set
the moderators the page asks for first, deposit, play, have the identity verified by an admin
in the console, withdraw, take a cool-off that stops play at once, close the account for good.
Each step through the screens a player uses; the server's state read back after each."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    PASSWORD,
    api,
    choose_stake,
    deposit,
    is_buy,
    press_buy,
    set_moderators,
    sign_up,
    tab,
)
from tests.browser.test_account_screens import _is, _log_in
from tests.browser.test_identity_withdrawals import IBAN, _open_file, _verify, _withdraw
from tests.browser.test_identity_withdrawals import console as console  # noqa: PLC0414 (fixture)

pytestmark = pytest.mark.browser


def test_a_whole_account_life(page: Page, console: Page) -> None:
    # Opened: the moderators before anything else.
    email = sign_up(page, moderators=None)
    expect(page.locator("#view-account")).to_be_visible()
    expect(page.locator("#moderators-needed")).to_be_visible()
    set_moderators(page, "200", "50")
    limits = api(page, "/me")["limits"]
    assert (limits["weekly_cents"], limits["stake_weekly_cents"]) == (20_000, 5_000)

    # Money in, a play.
    deposit(page, "100")
    tab(page, "Jeu")
    choose_stake(page, 100)
    play = press_buy(page, "Auto")
    assert play["finished"] is True
    balance = 10_000 - 100 + int(play["prize_cents"])
    assert api(page, "/me")["balance_cents"] == balance

    # The identity, checked by an admin; then money out.
    tab(page, "Compte")
    expect(page.locator("#identity-state")).to_contain_text("Compte provisoire")
    _open_file(console, email)
    assert _verify(console, IBAN) == 201
    page.reload()
    tab(page, "Compte")
    expect(page.locator("#identity-state")).to_contain_text("Identité vérifiée le")
    paid = _withdraw(page, "20")
    assert paid["state"] == "paid"
    balance -= 2_000
    assert api(page, "/me")["balance_cents"] == balance

    # A pause of 24 hours: play refused at once.
    page.select_option("#cooloff-hours", "24")
    page.get_by_role("button", name="Faire une pause", exact=True).click()
    with page.expect_response(_is("/me/cool-off", "POST")) as paused:
        page.get_by_role("button", name="Confirmer la pause de 24 h").click()
    assert paused.value.status == 200, paused.value.text()
    # Called a pause, with its end: not the heavier self-exclusion.
    expect(page.locator("#excluded")).to_contain_text("Pause jusqu'au ")
    expect(page.locator("#excluded")).not_to_contain_text("exclu")
    assert api(page, "/me")["pause_kind"] == "cool_off"
    tab(page, "Jeu")
    press = page.get_by_role("button", name="Auto", exact=True)
    expect(press).not_to_have_attribute("aria-disabled", "true")
    with page.expect_response(is_buy) as refused:
        press.click()
    body = refused.value.json()
    assert (refused.value.status, body["error"], body["pause"]) == (
        403,
        "self_excluded",
        "cool_off",
    )
    expect(page.locator("#message")).to_contain_text("Vous avez choisi une pause jusqu'au ")
    expect(page.locator("#message")).not_to_contain_text("exclu")
    assert api(page, "/me")["balance_cents"] == balance

    # Closed for good: logged out, and no log-in after.
    tab(page, "Compte")
    page.fill("#closure-password", PASSWORD)
    page.get_by_role("button", name="Fermer mon compte", exact=True).click()
    with page.expect_response(_is("/me/closure", "POST")) as closed:
        page.get_by_role("button", name="Confirmer la fermeture").click()
    assert closed.value.status == 204
    expect(page.locator("#login-form")).to_be_visible()
    answer = _log_in(page, email, PASSWORD)
    assert (answer.status, answer.json()["error"]) == (403, "account_closed")
