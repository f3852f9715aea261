"""The player's own protection screens under « Compte », in Chromium: a pause (cool-off) that
blocks play at once, a password change checked on the page before anything is sent, the
closure of the account that logs the page out for good, the three cards in English, readable."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Request, Response, expect

from tests.browser.conftest import Server
from tests.browser.helpers import PASSWORD, api, deposit, is_buy, sign_up, tab
from tests.browser.test_rough_edges import CONTRAST

pytestmark = pytest.mark.browser

NEW_PASSWORD = "un tout autre mot de passe"
# The page's dates, as formatWhen writes them in French (the browser's own time zone).
FORMAT_WHEN = """iso => new Intl.DateTimeFormat("fr-FR", {dateStyle: "short", timeStyle: "short"})
  .format(new Date(iso))"""


def _is(path: str, method: str) -> Callable[[Response], bool]:
    """A predicate for page.expect_response: ``method`` to ``/api/v1{path}``."""

    def matches(response: Response) -> bool:
        return response.request.method == method and response.url.endswith(f"/api/v1{path}")

    return matches


def _log_in(page: Page, email: str, password: str) -> Response:
    """Fill the log-in form and press « Se connecter »; the server's answer."""
    page.fill("#login-email", email)
    page.fill("#login-password", password)
    with page.expect_response(_is("/sessions", "POST")) as answer:
        page.locator("#login-submit").click()
    return answer.value


def test_a_pause_of_24_hours_blocks_play_at_once(page: Page) -> None:
    sign_up(page)
    deposit(page, "5")  # and on « Compte »
    page.select_option("#cooloff-hours", "24")
    page.get_by_role("button", name="Faire une pause", exact=True).click()
    confirm = page.get_by_role("button", name="Confirmer la pause de 24 h")
    expect(confirm).to_be_focused()
    asked = datetime.now(UTC)
    with page.expect_response(_is("/me/cool-off", "POST")) as answer:
        confirm.click()
    assert answer.value.status == 200, answer.value.text()
    until = api(page, "/me")["self_excluded_until"]
    assert until == answer.value.json()["until"]
    ahead = datetime.fromisoformat(until) - asked
    assert timedelta(hours=24) - timedelta(minutes=1) < ahead < timedelta(hours=24, minutes=1)
    when = page.evaluate(FORMAT_WHEN, until)
    expect(page.locator("#message")).to_contain_text(f"Pause jusqu'au {when}")
    expect(confirm).to_be_hidden()
    # The page's state knows it: the banner shows without a reload.
    expect(page.locator("#excluded")).to_be_visible()
    # Called what it is, a pause, with its end: never a self-exclusion.
    expect(page.locator("#excluded")).to_contain_text(f"Pause jusqu'au {when}")
    expect(page.locator("#excluded")).not_to_contain_text("exclu")
    tab(page, "Jeu")
    with page.expect_response(is_buy) as bought:
        page.get_by_role("button", name="Auto", exact=True).click()
    assert bought.value.status == 403
    assert (bought.value.json()["error"], bought.value.json()["pause"]) == (
        "self_excluded",
        "cool_off",
    )
    expect(page.locator("#message")).to_contain_text(f"Vous avez choisi une pause jusqu'au {when}")
    expect(page.locator("#message")).not_to_contain_text("exclu")
    assert api(page, "/plays?limit=20")["plays"] == []
    assert api(page, "/me")["balance_cents"] == 500


def test_a_new_password_is_checked_then_replaces_the_old(
    page: Page, browser: Browser, server: Server
) -> None:
    email = sign_up(page)
    # Another device, logged in as the same player: its session ends with the change.
    other = browser.new_context(base_url=server.url)
    try:
        logged = other.request.post("/api/v1/sessions", data={"email": email, "password": PASSWORD})
        assert logged.ok, logged.text()
        assert other.request.get("/api/v1/me").ok
        sent: list[Request] = []
        page.on("request", lambda r: sent.append(r) if r.url.endswith("/me/password") else None)
        tab(page, "Compte")
        message = page.locator("#message")
        # The two entries differ: said at once, nothing sent.
        page.fill("#password-current", PASSWORD)
        page.fill("#password-new", NEW_PASSWORD)
        page.fill("#password-again", NEW_PASSWORD + "!")
        page.get_by_role("button", name="Changer le mot de passe").click()
        expect(message).to_contain_text("Les deux saisies du nouveau mot de passe diffèrent")
        expect(page.locator("#password-again")).to_be_focused()
        # Too short for the server's rule: said at once, nothing sent.
        page.fill("#password-new", "court")
        page.fill("#password-again", "court")
        page.get_by_role("button", name="Changer le mot de passe").click()
        expect(message).to_contain_text("doit compter de 8 à 256 caractères")
        # A wrong current password: the server refuses it, said in French.
        page.fill("#password-current", "pas le bon mot de passe")
        page.fill("#password-new", NEW_PASSWORD)
        page.fill("#password-again", NEW_PASSWORD)
        with page.expect_response(_is("/me/password", "PUT")) as refused:
            page.get_by_role("button", name="Changer le mot de passe").click()
        assert refused.value.status == 403
        expect(message).to_contain_text("Mot de passe incorrect : rien n'a été changé.")
        expect(page.locator("#password-current")).to_be_focused()
        # Events come in order: the refused request is the first one the page sent.
        assert [r.method for r in sent] == ["PUT"]
        assert other.request.get("/api/v1/me").ok
        page.fill("#password-current", PASSWORD)
        with page.expect_response(_is("/me/password", "PUT")) as changed:
            page.get_by_role("button", name="Changer le mot de passe").click()
        assert changed.value.status == 204
        expect(message).to_contain_text("Mot de passe changé.")
        for field in ("#password-current", "#password-new", "#password-again"):
            expect(page.locator(field)).to_have_value("")
        assert api(page, "/me")["email"] == email  # this session stays
        assert other.request.get("/api/v1/me").status == 401
    finally:
        other.close()
    page.locator("#logout").click()
    expect(page.locator("#login-form")).to_be_visible()
    assert _log_in(page, email, PASSWORD).status == 401
    expect(page.locator("#message")).to_contain_text("Adresse e-mail ou mot de passe incorrect.")
    assert _log_in(page, email, NEW_PASSWORD).status == 200
    expect(page.locator("#view-game")).to_be_visible()
    expect(page.locator("#who")).to_have_text(email)


def test_closing_the_account_logs_out_for_good(page: Page) -> None:
    email = sign_up(page)
    tab(page, "Compte")
    box = page.locator("#closure-confirm-box")
    close = page.get_by_role("button", name="Fermer mon compte", exact=True)
    page.fill("#closure-password", "pas le bon mot de passe")
    close.click()
    warning = page.locator("#closure-warning")
    expect(warning).to_contain_text("Votre solde reste enregistré")
    expect(warning).to_contain_text("ce compte ne pourra plus jamais se connecter")
    confirm = page.get_by_role("button", name="Confirmer la fermeture")
    expect(confirm).to_be_focused()
    with page.expect_response(_is("/me/closure", "POST")) as refused:
        confirm.click()
    assert refused.value.status == 403
    expect(page.locator("#message")).to_contain_text("Mot de passe incorrect")
    expect(box).to_be_empty()
    assert api(page, "/me")["email"] == email  # still open, still logged in
    # « Annuler » steps back and sends nothing.
    page.fill("#closure-password", PASSWORD)
    close.click()
    box.get_by_role("button", name="Annuler").click()
    expect(box).to_be_empty()
    expect(close).to_be_focused()
    close.click()
    with page.expect_response(_is("/me/closure", "POST")) as closed:
        page.get_by_role("button", name="Confirmer la fermeture").click()
    assert closed.value.status == 204
    # Logged out as « Se déconnecter » does, and told why.
    expect(page.locator("#login-form")).to_be_visible()
    expect(page.locator("#account-bar")).to_be_hidden()
    expect(page.locator("#logout")).to_be_hidden()
    expect(page.locator("#tabs").get_by_role("button", name="Compte")).to_be_hidden()
    expect(page.locator("#message")).to_contain_text("Votre compte est fermé.")
    expect(page.locator("#closure-password")).to_have_value("")
    assert page.request.get("/api/v1/me").status == 401
    answer = _log_in(page, email, PASSWORD)
    assert answer.status == 403
    assert answer.json()["error"] == "account_closed"
    expect(page.locator("#message")).to_contain_text("Ce compte est fermé")
    expect(page.locator("#message")).to_contain_text("il ne permet plus de se connecter")
    expect(page.locator("#login-form")).to_be_visible()


def test_the_cards_speak_english_and_are_readable(page: Page, screenshots: Path) -> None:
    sign_up(page)
    page.locator("#lang").click()
    tab(page, "Account")
    account = page.locator("#view-account")
    for title in ("Take a break (cool-off)", "Change password", "Close my account"):
        expect(account.get_by_role("heading", name=title, exact=True)).to_be_visible()
    for french in ("Pause (cool-off)", "Changer de mot de passe", "Fermer mon compte"):
        expect(account.get_by_role("heading", name=french)).to_have_count(0)
    expect(page.locator('#cooloff-hours option[value="168"]')).to_have_text("7 days")
    page.fill("#closure-password", PASSWORD)
    page.get_by_role("button", name="Close my account", exact=True).click()
    expect(page.locator("#closure-warning")).to_contain_text("Your balance stays on record")
    # Text on the dark cards stays readable (WCAG contrast 4.5 or more).
    for selector in (
        "#cooloff-form h2",
        'label[for="cooloff-hours"]',
        "#cooloff-hours",
        "#password-form h2",
        'label[for="password-new"]',
        "#closure-form h2",
        "#closure-warning",
        "#closure-confirm",
    ):
        ratio = float(page.locator(selector).evaluate(CONTRAST))
        assert ratio >= 4.5, (selector, ratio)
    page.locator("#closure-form").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "account-protection-en.png"), full_page=True)
