"""Identity and withdrawals on both screens (issue 27, items 2 and 6), in Chromium: the player's
page says the account is provisional with its days left and offers no withdrawal; an admin
verifies the identity in the player's file (a mistyped IBAN refused first); the player then
withdraws: a small amount is paid at once, larger ones wait in the console's « Retraits »,
where the admin approves one and rejects the other with a reason the player reads, the money
back on the balance. In French, then in English."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Server
from tests.browser.helpers import deposit, sign_up, tab
from tests.browser.test_console import console_as
from tests.browser.test_console import tab as console_tab

pytestmark = pytest.mark.browser

ADMIN = "identity@example.org"
IBAN = "FR76 3000 6000 0112 3456 7890 189"


@pytest.fixture
def console(browser: Browser, server: Server) -> Iterator[Page]:
    """The console as an admin, in its own browser profile."""
    with console_as(browser, server, ADMIN) as page:
        yield page


def _open_file(console: Page, email: str) -> None:
    console_tab(console, "Joueurs")
    console.fill("#players-email", email)
    console.locator("#players-submit").click()
    console.locator("#players-rows tr").get_by_role("button").click()
    expect(console.locator("#file-title")).to_contain_text(email)


def _verify(console: Page, iban: str) -> int:
    console.select_option("#identity-kind", "id_card")
    console.fill("#identity-ref", "4567")
    console.fill("#identity-last", "Lefèvre")
    console.fill("#identity-first", "Inès Marie")
    console.fill("#identity-birth", "1990-05-17")
    console.fill("#identity-iban", iban)
    with console.expect_response(lambda r: r.url.endswith("/identity")) as answer:
        console.locator("#identity-submit").click()
    return answer.value.status


def _withdraw(page: Page, euros: str) -> dict[str, object]:
    page.fill("#withdrawal-amount", euros)
    with page.expect_response(
        lambda r: r.url.endswith("/api/v1/withdrawals") and r.request.method == "POST"
    ) as answer:
        page.locator("#withdrawal-submit").click()
    assert answer.value.status == 201, answer.value.text()
    body: dict[str, object] = answer.value.json()
    return body


def test_identity_then_withdrawals_on_both_screens(
    page: Page, console: Page, screenshots: Path
) -> None:
    email = sign_up(page)
    deposit(page, "3000")
    state = page.locator("#identity-state")
    expect(state).to_contain_text("Compte provisoire")
    expect(state).to_contain_text("encore 30 jour(s)")
    expect(page.locator("#withdrawal-form")).to_be_hidden()

    _open_file(console, email)
    expect(console.locator("#file-identity")).to_contain_text("provisoire, 30 jour(s)")
    assert _verify(console, IBAN.replace("189", "188")) == 422  # mistyped: nothing verified
    # The refusal names the field, marks it and takes the admin there.
    expect(console.locator("#message")).to_have_text(
        "Saisie refusée : vérifiez « IBAN au nom du joueur »."
    )
    expect(console.locator("#identity-iban")).to_have_attribute("aria-invalid", "true")
    expect(console.locator("#identity-iban")).to_be_focused()
    expect(console.locator("#identity-form")).to_be_visible()
    assert _verify(console, IBAN) == 201
    expect(console.locator("#message")).to_contain_text("vérifiée")
    expect(console.locator("#file-identity")).to_contain_text("vérifiée le")
    expect(console.locator("#identity-check")).to_contain_text("FR7630006000011234567890189")
    expect(console.locator("#identity-check")).to_contain_text("Lefèvre, Inès Marie")

    tab(page, "Jeu")
    tab(page, "Compte")  # asks for the account again
    page.reload()
    tab(page, "Compte")
    expect(state).to_contain_text("Identité vérifiée le")
    expect(page.locator("#withdrawal-form")).to_be_visible()
    paid = _withdraw(page, "50")
    assert paid["state"] == "paid"
    expect(page.locator("#message")).to_contain_text("versé sur votre compte bancaire")
    big = _withdraw(page, "1500")
    small_big = _withdraw(page, "1200")
    assert (big["state"], small_big["state"]) == ("requested", "requested")
    expect(page.locator("#message")).to_contain_text("attend la validation")
    expect(page.locator("#balance")).to_have_text("250,00 €")
    items = page.locator("#withdrawals-list li")
    expect(items).to_have_count(3)
    expect(items.first).to_contain_text("En attente de validation")
    expect(items.first).to_contain_text("FR76 •••• 0189")
    page.screenshot(path=str(screenshots / "account-withdrawals.png"), full_page=True)

    console_tab(console, "Retraits")
    rows = console.locator("#withdrawals-rows tr")
    first = console.locator(f'#withdrawals-rows tr[data-withdrawal-id="{big["withdrawal_id"]}"]')
    second = console.locator(
        f'#withdrawals-rows tr[data-withdrawal-id="{small_big["withdrawal_id"]}"]'
    )
    expect(first).to_contain_text(email)
    expect(first).to_contain_text("1 500,00 €")
    expect(first).to_contain_text("FR7630006000011234567890189")
    console.screenshot(path=str(screenshots / "console-withdrawals.png"), full_page=True)
    # « Valider » asks first: the amount, the IBAN and the player said again; « Annuler »
    # pays nothing.
    approvals: list[str] = []
    console.on("request", lambda r: approvals.append(r.url) if r.url.endswith("/approve") else None)
    first.get_by_role("button", name="Valider").click()
    confirm = console.locator("#approve-form")
    expect(confirm).to_be_visible()
    expect(confirm).to_contain_text(
        "1 500,00 € seront versés sur l'IBAN FR7630006000011234567890189"
    )
    expect(confirm).to_contain_text(email)
    console.locator("#approve-cancel").click()
    expect(confirm).to_be_hidden()
    expect(first).to_be_visible()
    assert approvals == []
    first.get_by_role("button", name="Valider").click()
    with console.expect_response(lambda r: r.url.endswith("/approve")) as answer:
        console.locator("#approve-submit").click()
    assert answer.value.status == 200, answer.value.text()
    assert len(approvals) == 1
    expect(confirm).to_be_hidden()
    expect(console.locator("#message")).to_contain_text("validé")
    expect(first).to_have_count(0)
    second.get_by_role("button", name="Refuser").click()
    console.fill("#reject-reason", "IBAN au nom d'un tiers")
    with console.expect_response(lambda r: r.url.endswith("/reject")) as answer:
        console.locator("#reject-submit").click()
    assert answer.value.status == 200, answer.value.text()
    expect(console.locator("#message")).to_contain_text("rendus au joueur")
    expect(rows.filter(has_text=email)).to_have_count(0)

    tab(page, "Jeu")
    tab(page, "Compte")
    expect(items.first).to_contain_text("Refusé, montant rendu")
    expect(items.first).to_contain_text("Motif : IBAN au nom d'un tiers")
    expect(items.nth(1)).to_contain_text("Versé")
    page.reload()
    expect(page.locator("#balance")).to_have_text("1 450,00 €")
    tab(page, "Compte")
    page.locator("#lang").click()
    expect(state).to_contain_text("Identity verified on")
    expect(items.first).to_contain_text("Refused, amount given back")
    expect(items.first).to_contain_text("Reason: IBAN au nom d'un tiers")
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(screenshots / "account-withdrawals-phone.png"), full_page=True)
    page.locator("#lang").click()  # back to French for the next tests of this browser


def test_a_provisional_account_is_told_why_a_withdrawal_cannot_be(page: Page) -> None:
    sign_up(page)
    tab(page, "Compte")
    expect(page.locator("#identity-state")).to_contain_text("Aucun retrait")
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "pharaon_csrf")
    refused = page.request.post(
        "/api/v1/withdrawals",
        data={"amount_cents": 100},
        headers={"X-CSRF-Token": token, "Idempotency-Key": "k1"},
    )
    assert (refused.status, refused.json()["error"]) == (403, "identity_unverified")
