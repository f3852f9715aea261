"""An auditor's sign-off in the console, in Chromium: a block loaded by the admin shows « en
attente d'approbation »; the admin may verify it but has no « Approuver »; the auditor verifies
it (the server's figures: lots, hashes, near-miss measures, order tests), approves it, and it
goes on sale: a player's purchase at its price is served from it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import BLOCK_SIZE, Server
from tests.browser.test_console import buy_as_a_player, console_as, operator_get

pytestmark = pytest.mark.browser

ADMIN = "approvals@example.org"  # each test logs its own operators in: a TOTP code opens once
AUDITOR = "auditor@example.org"
PRICE = 200


def _block(blocks: list[dict[str, object]], block_id: int) -> dict[str, object]:
    return next(b for b in blocks if b["block_id"] == block_id)


def test_an_auditor_verifies_and_approves_a_block_which_goes_on_sale(
    browser: Browser, server: Server
) -> None:
    for email, role in ((ADMIN, "admin"), (AUDITOR, "auditor")):
        if email not in server.totp_secrets:
            server.add_operator(email, role)
    # Nothing on sale at 2 € but the block to approve: the one open is stopped first.
    server.cli("blocks", "deactivate", str(server.blocks[PRICE]), "--reason", "browser test")
    block_id = server.load_block(PRICE, server.blocks[PRICE] + 200, approve=False)
    try:
        row = f'#blocks-rows tr[data-block-id="{block_id}"]'
        with console_as(browser, server, ADMIN) as page:
            expect(page.locator(f"{row} .approval")).to_have_text("en attente d'approbation")
            expect(page.locator(f"{row} .verify-block")).to_be_visible()
            expect(page.locator(f"{row} .approve-block")).to_have_count(0)  # an admin's: none

        with console_as(browser, server, AUDITOR) as page:
            expect(page.locator("#analyst-note")).to_contain_text("Profil auditeur")
            expect(page.locator(f"{row} .approval")).to_have_text("en attente d'approbation")
            page.locator(f"{row} .verify-block").click()
            panel = page.locator("#verification")
            # The server's first verification imports the evaluator (numba): seconds.
            expect(panel).to_be_visible(timeout=30_000)
            expect(panel.locator("h3")).to_have_text(
                f"Vérification du bloc n° {block_id} par le serveur"
            )
            expect(panel.locator(".verdict")).to_contain_text(f"les {BLOCK_SIZE} unités")
            expect(panel.locator(".hashes")).to_contain_text("SHA-256 des unités : identique")
            figures = operator_get(page, f"/blocks/{block_id}/verification")
            assert figures["ok"], figures["problems"]
            measures = panel.locator(".verification-measures tbody tr")
            expect(measures).to_have_count(len(figures["fairness"]["measures"]))
            first = figures["fairness"]["measures"][0]
            expect(measures.first.locator("td").first).to_have_text(first["label"])
            expect(panel.locator(".verification-order tbody tr")).to_have_count(
                len(figures["fairness"]["order"])
            )
            expect(panel.locator(".verification-lots tbody tr")).to_have_count(len(figures["lots"]))

            panel.locator(".approve-block").click()
            expect(page.locator("#message")).to_contain_text(
                f"Bloc n° {block_id} approuvé : il est en vente."
            )
            expect(panel).to_be_hidden()
            expect(page.locator(f"{row} .state")).to_contain_text("en vente")
            expect(page.locator(f"{row} .approval")).to_contain_text(f"approuvé par {AUDITOR}")
            expect(page.locator(f"{row} .verify-block")).to_have_count(0)
            listed = _block(operator_get(page, "/blocks"), block_id)
            assert (listed["state"], listed["approved_by"]) == ("open", f"operator:{AUDITOR}")
            assert listed["loaded_by"] == f"operator:{server.acting}"  # the first admin
            server.blocks[PRICE] = block_id

            buy_as_a_player(server, [PRICE])
            assert _block(operator_get(page, "/blocks"), block_id)["sold"] == 1
    finally:
        if server.blocks[PRICE] != block_id:  # failed before the approval: a block for the rest
            server.load_block(PRICE, server.blocks[PRICE] + 300)
