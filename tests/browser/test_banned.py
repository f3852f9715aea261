"""The banned-gamblers list in the console (issue 27, item 3), in Chromium: the operator loads
the list with ``pharaon banned load``; an admin's identity check of a person on it is refused
and said plainly, and the player's file and the search say « Interdit de jeux »; the player's
page only says the account is suspended."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Server
from tests.browser.helpers import deposit, is_buy, sign_up, tab
from tests.browser.test_console import console_as
from tests.browser.test_identity_withdrawals import IBAN, _open_file

pytestmark = pytest.mark.browser

ADMIN = "banned@example.org"


@pytest.fixture
def console(browser: Browser, server: Server) -> Iterator[Page]:
    """The console as an admin, in its own browser profile."""
    with console_as(browser, server, ADMIN) as page:
        yield page


def test_a_banned_person_is_refused_and_shown_in_the_console(
    page: Page, console: Page, server: Server, tmp_path: Path
) -> None:
    listed = tmp_path / "interdits.csv"
    # sign_up's birth date; names no other test gives.
    listed.write_text("last_name,first_names,birth_date\nSETHI-BANNI,Néfertari,1990-05-17\n")
    assert server.acting is not None
    out = server.cli("banned", "load", str(listed), "--as", server.acting)
    assert "loaded: 1 people" in out

    email = sign_up(page)
    deposit(page, "5")
    _open_file(console, email)
    console.select_option("#identity-kind", "id_card")
    console.fill("#identity-ref", "4567")
    console.fill("#identity-last", "Sethi Banni")
    console.fill("#identity-first", "Nefertari")
    console.fill("#identity-birth", "1990-05-17")
    console.fill("#identity-iban", IBAN)
    with console.expect_response(lambda r: r.url.endswith("/identity")) as answer:
        console.locator("#identity-submit").click()
    assert (answer.value.status, answer.value.json()["error"]) == (403, "banned")
    expect(console.locator("#message")).to_contain_text("liste des interdits de jeux")
    _open_file(console, email)
    expect(console.locator("#file-standing")).to_contain_text("Interdit de jeux")
    expect(console.locator("#players-rows")).to_contain_text("Interdit de jeux")

    tab(page, "Jeu")
    with page.expect_response(is_buy) as bought:
        page.get_by_role("button", name="Auto", exact=True).click()
    assert (bought.value.status, bought.value.json()["error"]) == (403, "suspended")
    expect(page.locator("body")).not_to_contain_text("nterdit")
