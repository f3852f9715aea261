"""An admin acts on a player from the console (issue 29, item 5), and the player sees each
measure on their own page, in Chromium: an exclusion for 7 days refuses the play with its end
and its reason under « Compte »; lifted, the player plays again; closed, the log-in says so with
the reason. The console's file lists each measure with the admin's e-mail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Response, expect

from tests.browser.conftest import Server
from tests.browser.helpers import PASSWORD, deposit, is_buy, sign_up, tab
from tests.browser.test_console import console_as, operator_get
from tests.browser.test_console import tab as console_tab

pytestmark = pytest.mark.browser

ADMIN = "measures@example.org"


@pytest.fixture
def console(browser: Browser, server: Server) -> Iterator[Page]:
    """The console as an admin, in its own browser profile."""
    with console_as(browser, server, ADMIN) as page:
        yield page


def _the_player_file(response: Response) -> bool:
    return response.request.method == "GET" and "/api/v1/operator/players/" in response.url


def _take(console: Page, email: str, measure: str, reason: str, days: int | None = None) -> None:
    console_tab(console, "Joueurs")
    console.fill("#players-email", email)
    console.locator("#players-submit").click()
    # The file opened again is drawn anew when its answer comes: the form is filled after.
    with console.expect_response(_the_player_file):
        console.locator("#players-rows tr").get_by_role("button").click()
    expect(console.locator("#file-title")).to_contain_text(email)
    console.select_option("#measure-kind", measure)
    if days is not None:
        console.fill("#measure-days", str(days))
    box = console.locator("#measure-reason")
    # A box to write a reason in: the form's width, several lines high, as the inputs look.
    width, height, form, field = box.evaluate(
        "n => [n.getBoundingClientRect().width, n.getBoundingClientRect().height, "
        "n.form.clientWidth, n.form.elements['measure-kind'].getBoundingClientRect().width]"
    )
    assert width >= 0.8 * form, (width, form)
    assert width >= field - 1, (width, field)
    assert height >= 80, height
    console.fill("#measure-reason", reason)
    with console.expect_response(lambda r: r.url.endswith("/measures")) as answer:
        console.locator("#measure-submit").click()
    assert answer.value.status == 201, answer.value.text()
    expect(console.locator("#message")).to_contain_text("appliquée au joueur")


def test_an_admin_excludes_lifts_and_closes_and_the_player_sees_it(
    page: Page, console: Page
) -> None:
    email = sign_up(page)
    deposit(page, "5")
    expect(page.locator("#notes")).to_be_hidden()  # no message yet

    _take(console, email, "exclude", "Jeu excessif constaté, pause imposée", days=7)
    expect(console.locator("#file-standing")).to_contain_text("exclu jusqu'au")
    first = console.locator("#file-notes tbody tr").first
    expect(first).to_contain_text("Exclure pour une durée")
    expect(first).to_contain_text(ADMIN)

    tab(page, "Jeu")
    with page.expect_response(is_buy) as answer:
        page.get_by_role("button", name="Auto", exact=True).click()
    assert (answer.value.status, answer.value.json()["error"]) == (403, "suspended")
    expect(page.locator("#message")).to_contain_text("exclu votre compte du jeu jusqu'au")
    page.reload()
    expect(page.locator("#suspended")).to_contain_text("jusqu'au")
    tab(page, "Compte")
    note = page.locator("#notes-list li").first
    expect(note).to_contain_text("Compte exclu du jeu")
    expect(note).to_contain_text("Jeu excessif constaté, pause imposée")
    expect(page.locator("#notes")).not_to_contain_text(ADMIN)  # not who did it

    _take(console, email, "lift", "Pause levée après entretien")
    tab(page, "Compte")  # opening the account asks for the messages again
    expect(page.locator("#notes-list li")).to_have_count(2)
    expect(page.locator("#notes-list li").first).to_contain_text("Suspension levée")
    tab(page, "Jeu")
    with page.expect_response(is_buy) as answer:
        page.get_by_role("button", name="Auto", exact=True).click()
    assert answer.value.status == 201, answer.value.text()

    _take(console, email, "close", "Fermeture demandée par courrier")
    expect(console.locator("#file-standing")).to_contain_text("fermé le")
    found = operator_get(console, f"/players?email={email}")
    assert found[0]["closed_at"] is not None
    page.reload()  # the session ended with the closure
    expect(page.locator("#login-form")).to_be_visible()
    page.fill("#login-email", email)
    page.fill("#login-password", PASSWORD)
    page.locator("#login-submit").click()
    expect(page.locator("#message")).to_contain_text("Ce compte a été fermé par l'opérateur le")
    expect(page.locator("#message")).to_contain_text("Motif : Fermeture demandée par courrier")
