"""The operator's console at /operator/ in Chromium: an admin logs in with TOTP, loads a block
file, watches sales move after a player's purchases, exports, reads a player and checks the
audit chain; an analyst sees no admin control and gets the server's 403 when forcing one. No
page breaks the CSP. A screenshot of each screen goes to artifacts/screenshots/console-*.png."""

from __future__ import annotations

import io
import json
import secrets
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pyotp
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from pharaon.game.money import format_cents
from pharaon.pool.blockfile import write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service.clock import utcnow
from tests.browser.conftest import BLOCK_SIZE, OPERATOR_PASSWORD, Server
from tests.browser.helpers import PASSWORD, new_email
from tests.web.live import MODERATORS

PARIS = ZoneInfo("Europe/Paris")

pytestmark = pytest.mark.browser

ADMIN = "boss@example.org"
PAGE = 10  # audit records per page, chosen on the page
ANALYST = "eve@example.org"
# Collects the page's CSP violations (an init script is the browser's, not the page's).
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


@pytest.fixture(scope="module")
def staff(server: Server) -> dict[str, str]:
    """An admin and an analyst (e-mail → TOTP secret), added once for the module."""
    for email, role in ((ADMIN, "admin"), (ANALYST, "analyst")):
        if email not in server.totp_secrets:
            server.add_operator(email, role)
    return server.totp_secrets


@pytest.fixture
def console(page: Page) -> Iterator[Page]:
    """The page at /operator/, failing the test on any CSP violation it reports."""
    messages: list[str] = []

    def listen(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            messages.append(message.text)

    page.on("console", listen)
    page.add_init_script(WATCH_CSP)
    page.goto("/operator/")
    expect(page.locator("#view-login")).to_be_visible()
    yield page
    violations = page.evaluate("window.__csp")
    assert not violations, f"CSP violations: {violations}"
    assert not messages, f"CSP messages: {messages}"


_USED_CODES: dict[str, str] = {}


def _fresh_code(secret: str) -> str:
    """A TOTP code of ``secret`` not yet sent from this process: the server refuses a code
    used once (a replay), so a second log-in in the same 30 s waits for the next code."""
    totp = pyotp.TOTP(secret)
    code = totp.now()
    while _USED_CODES.get(secret) == code:
        time.sleep(0.5)
        code = totp.now()
    _USED_CODES[secret] = code
    return code


def log_in(page: Page, email: str, secret: str) -> None:
    page.fill("#login-email", email)
    page.fill("#login-password", OPERATOR_PASSWORD)
    page.fill("#login-totp", _fresh_code(secret))
    page.locator("#login-submit").click()
    expect(page.locator("#view-blocks")).to_be_visible()
    expect(page.locator("#who")).to_have_text(email)


@contextmanager
def console_as(browser: Browser, server: Server, email: str) -> Iterator[Page]:
    """The console logged in as the admin ``email`` (made at its first use), in its own
    browser profile, closed after."""
    if email not in server.totp_secrets:
        server.add_operator(email, "admin")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=server.url)
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        page.goto("/operator/")
        log_in(page, email, server.totp_secrets[email])
        yield page
    finally:
        context.close()


def tab(page: Page, name: str) -> None:
    page.locator("#tabs").get_by_role("button", name=name, exact=True).click()


def buy_as_a_player(server: Server, stakes: list[int]) -> tuple[str, int]:
    """Sign up a player through the API, deposit, buy ``stakes`` (Auto), then self-exclude for
    30 days; the e-mail and the lots won."""
    email = new_email()
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=10) as http:
        signed = http.post(
            "/players", json={"email": email, "password": PASSWORD, "birth_date": "1990-05-17"}
        )
        assert signed.status_code == 201, signed.text
        token = http.post("/sessions", json={"email": email, "password": PASSWORD}).json()
        http.cookies.clear()
        auth = {"Authorization": f"Bearer {token['token']}"}

        def post(path: str, body: Any) -> Any:
            headers = {**auth, "Idempotency-Key": secrets.token_hex(16)}
            answer = http.post(path, json=body, headers=headers)
            assert answer.status_code == 201, answer.text
            return answer.json()

        moderators = http.put("/me/limits", json=MODERATORS, headers=auth)
        assert moderators.status_code == 200, moderators.text
        post("/deposits", {"amount_cents": sum(stakes)})
        won = sum(
            int(post("/plays", {"stake_cents": s, "mode": "auto"})["prize_cents"]) for s in stakes
        )
        excluded = http.post("/me/self-exclusion", json={"days": 30}, headers=auth)
        assert excluded.status_code == 200, excluded.text
    return email, won


def operator_get(page: Page, path: str) -> Any:
    answer = page.request.get(f"/api/v1/operator{path}")
    assert answer.ok, answer.text()
    return answer.json()


def test_an_admin_runs_the_console(
    console: Page, server: Server, staff: dict[str, str], screenshots: Path, tmp_path: Path
) -> None:
    page = console
    page.screenshot(path=str(screenshots / "console-login.png"), full_page=True)
    log_in(page, ADMIN, staff[ADMIN])
    expect(page.locator("#role")).to_have_text("administrateur")
    for block_id in server.blocks.values():
        expect(page.locator(f'#blocks-rows tr[data-block-id="{block_id}"]')).to_be_visible()

    # A block file through the file input.
    path = tmp_path / "uploaded.parquet"
    block = generate_block(200, design=test_design(BLOCK_SIZE), block_number=77)
    write_block(block, path)
    page.set_input_files("#upload-file", str(path))
    with page.expect_response(  # the POST, not a GET of the list's refresh
        lambda r: r.url.endswith("/api/v1/operator/blocks") and r.request.method == "POST"
    ) as answer:
        page.locator("#upload-submit").click()
    assert answer.value.status == 201, answer.value.text()
    loaded = answer.value.json()["block_id"]
    expect(page.locator("#message")).to_contain_text(f"Bloc n° {loaded} chargé.")
    row = page.locator(f'#blocks-rows tr[data-block-id="{loaded}"]')
    expect(row.locator(".sold")).to_have_text("0")
    expect(row.locator(".remaining")).to_have_text(str(BLOCK_SIZE))
    expect(row.get_by_role("button", name=f"Désactiver le bloc n° {loaded}")).to_be_visible()
    page.screenshot(path=str(screenshots / "console-blocks.png"), full_page=True)

    # Sales move after a player's purchases.
    tab(page, "Ventes")
    before = operator_get(page, "/sales")
    expect(page.locator("#sum-stakes")).to_have_text(format_cents(before["stakes_cents"]))
    player, won = buy_as_a_player(server, [100, 100, 200, 300])
    page.locator("#sales-submit").click()
    expect(page.locator("#sum-stakes")).to_have_text(format_cents(before["stakes_cents"] + 700))
    expect(page.locator("#sum-prizes")).to_have_text(format_cents(before["prizes_cents"] + won))
    after = operator_get(page, "/sales")
    assert after["stakes_cents"] == before["stakes_cents"] + 700
    expect(page.locator("#sum-liability")).to_have_text(format_cents(after["liability_cents"]))
    expect(page.locator("#sum-planned")).to_have_text("70,00\u00a0%")
    days = {line["day"] for line in after["lines"]}
    expect(page.locator("#chart-stakes svg rect.bar[data-day]")).to_have_count(len(after["lines"]))
    expect(page.locator("#chart-payout svg circle.point")).to_have_count(len(days))
    expect(page.locator("#chart-payout svg line.reference")).to_have_count(1)
    today = utcnow().date().isoformat()
    point = page.locator(f'#chart-payout svg circle.point[data-day="{today}"]')
    today_lines = [x for x in after["lines"] if x["day"] == today]
    stakes = sum(x["stakes_cents"] for x in today_lines)
    prizes = sum(x["prizes_cents"] for x in today_lines)
    expect(point).to_have_attribute("data-bp", str(prizes * 10_000 // stakes))
    expect(page.locator("#sales-rows tr")).to_have_count(len(after["lines"]))
    page.screenshot(path=str(screenshots / "console-sales.png"), full_page=True)

    # The regulator's export as a zip.
    with page.expect_download() as download:
        page.locator("#export-submit").click()
    saved = tmp_path / "export.zip"
    download.value.save_as(saved)
    with zipfile.ZipFile(io.BytesIO(saved.read_bytes())) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        plays = archive.read("plays.csv").decode("utf-8").splitlines()
    assert manifest["rows"]["plays"] == len(plays) - 1 == sum(x["plays"] for x in today_lines)
    expect(page.locator("#message")).to_contain_text("Export téléchargé")

    # A player's file, read only.
    tab(page, "Joueurs")
    page.fill("#players-email", player)
    page.locator("#players-submit").click()
    found = page.locator("#players-rows tr")
    expect(found).to_have_count(1)
    found.get_by_role("button").click()
    expect(page.locator("#file-title")).to_contain_text(player)
    expect(page.locator("#file-plays tbody tr")).to_have_count(4)
    # The console tells times in Paris (operator/js/i18n.js), which is a day ahead of UTC
    # for an hour or two before UTC's midnight.
    until = (utcnow() + timedelta(days=30)).astimezone(PARIS).strftime("%d/%m/%Y")
    expect(page.locator("#file-excluded")).to_contain_text(until)
    expect(page.locator("#file-excluded")).to_contain_text("(auto-exclusion)")
    expect(found.locator("td").nth(4)).to_contain_text(until)
    page.screenshot(path=str(screenshots / "console-players.png"), full_page=True)

    # The audit log, filtered, and its check.
    tab(page, "Audit")
    total = operator_get(page, "/audit?limit=1")["total"]
    assert total > PAGE  # blocks loaded, operators added, players, deposits, exports...
    page.select_option("#audit-limit", str(PAGE))
    expect(page.locator("#audit-position")).to_have_text(f"1–{PAGE} sur {total}")
    expect(page.locator("#audit-rows tr")).to_have_count(PAGE)
    expect(page.locator("#audit-rows tr").first).to_have_attribute("data-seq", str(total))
    expect(page.locator("#audit-newer")).to_be_disabled()
    page.locator("#audit-older").click()
    expect(page.locator("#audit-position")).to_have_text(
        f"{PAGE + 1}–{min(2 * PAGE, total)} sur {total}"
    )
    expect(page.locator("#audit-rows tr").first).to_have_attribute("data-seq", str(total - PAGE))
    page.fill("#audit-kind", "export")
    page.locator("#audit-submit").click()
    expect(page.locator("#audit-rows tr")).to_have_count(1)
    expect(page.locator("#audit-rows .actor")).to_have_text(f"opérateur {ADMIN}")
    expect(page.locator("#audit-rows .kind")).to_have_text("Export pour le régulateur")
    page.locator("#audit-check").click()
    expect(page.locator("#audit-verdict")).to_have_text("Tout est vérifié : la chaîne est intacte.")
    expect(page.locator("#audit-result li.bad")).to_have_count(0)
    page.screenshot(path=str(screenshots / "console-audit.png"), full_page=True)

    page.locator("#lang").click()
    expect(page.locator("#audit-check")).to_have_text("Check the chain")
    expect(page.locator("#audit-verdict")).to_have_text("All checked: the chain is intact.")
    page.locator("#lang").click()
    expect(page.locator("#audit-check")).to_have_text("Vérifier la chaîne")


def test_an_analyst_reads_and_is_refused_changes(
    console: Page, server: Server, staff: dict[str, str], tmp_path: Path
) -> None:
    page = console
    log_in(page, ANALYST, staff[ANALYST])
    expect(page.locator("#role")).to_have_text("analyste")
    rows = page.locator("#blocks-rows tr")
    expect(rows.first).to_be_visible()
    buttons = page.locator("#blocks-rows button.deactivate")
    assert buttons.count() == rows.count()
    expect(page.locator("#blocks-rows button.deactivate:visible")).to_have_count(0)
    expect(page.locator("#upload-form")).to_be_hidden()
    expect(page.locator("#analyst-note")).to_be_visible()

    # Forced: the server refuses, and the page says so.
    block_id = server.blocks[100]
    forced = page.locator(f'#blocks-rows tr[data-block-id="{block_id}"] button.deactivate')
    forced.evaluate("button => button.removeAttribute('hidden')")
    forced.click()
    page.fill("#deactivate-reason", "not mine to stop")
    with page.expect_response(lambda r: r.url.endswith(f"/blocks/{block_id}/deactivate")) as answer:
        page.locator("#deactivate-submit").click()
    assert answer.value.status == 403
    expect(page.locator("#message")).to_have_text("Refusé (403) : réservé aux administrateurs.")
    states = {b["block_id"]: b["state"] for b in operator_get(page, "/blocks")}
    assert states[block_id] != "deactivated"

    page.locator("#upload-form").evaluate("form => form.removeAttribute('hidden')")
    path = tmp_path / "refused.parquet"
    write_block(generate_block(100, design=test_design(BLOCK_SIZE), block_number=78), path)
    page.set_input_files("#upload-file", str(path))
    page.locator("#upload-submit").click()
    expect(page.locator("#message")).to_contain_text("Refusé (403)")
    assert len(operator_get(page, "/blocks")) == len(states)
