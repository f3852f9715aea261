"""The console speaks French throughout (issue 29, item 4; issue 38, item 3): the server's
errors said from their codes, ledger entries named for what they are, times in Paris time
whatever the operator's machine says, with the reports' UTC days stated, and every screen read
for an English word or a raw code (the audit's checks and records, the verification's measures
and tests). In Chromium, on a machine set to New York."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from pharaon.game.money import format_cents
from pharaon.service import findings
from tests.browser.conftest import Server
from tests.browser.helpers import PASSWORD, new_email
from tests.browser.test_console import log_in, operator_get, tab
from tests.web.live import MODERATORS
from tests.web.test_console_words import dictionary

pytestmark = pytest.mark.browser

PARIS = ZoneInfo("Europe/Paris")
RAW_KINDS = {"purchase", "prize", "deposit"}
# One admin per test: a TOTP code opens one session, and the tests log in within 30 s.
ADMINS = ("errors@example.org", "ledger@example.org", "stock@example.org", "words@example.org")
# The text a screen shows: its visible text nodes, but the audit records' contents and hashes
# (data: JSON and hex, in <code>).
SHOWN_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const parent = walker.currentNode.parentElement;
    if (!parent || parent.closest("code, script, style")) continue;
    if (!parent.checkVisibility()) continue;
    out.push(walker.currentNode.textContent);
  }
  return out.join("\\n");
}"""
RAW_CODE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")


@pytest.fixture(scope="module")
def admins(server: Server) -> dict[str, str]:
    for email in ADMINS:
        if email not in server.totp_secrets:
            server.add_operator(email, "admin")
    return server.totp_secrets


@pytest.fixture
def far_console(browser: Browser, server: Server) -> Iterator[Page]:
    """The console in a browser whose clock is New York's and whose locale is American."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 800},
        base_url=server.url,
        timezone_id="America/New_York",
        locale="en-US",
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto("/operator/")
    yield page
    context.close()


def _player_with_an_auto_lot(server: Server) -> str:
    """A player who deposited and bought Auto plays at 1 € until one won a lot."""
    email = new_email()
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=10) as http:
        body = {"email": email, "password": PASSWORD, "birth_date": "1990-05-17"}
        assert http.post("/players", json=body).status_code == 201
        token = http.post("/sessions", json={"email": email, "password": PASSWORD}).json()
        http.cookies.clear()
        auth = {"Authorization": f"Bearer {token['token']}"}

        def post(path: str, body: dict[str, object]) -> dict[str, object]:
            headers = {**auth, "Idempotency-Key": secrets.token_hex(16)}
            answer = http.post(path, json=body, headers=headers)
            assert answer.status_code == 201, answer.text
            return dict(answer.json())

        moderators = http.put("/me/limits", json=MODERATORS, headers=auth)
        assert moderators.status_code == 200, moderators.text
        post("/deposits", {"amount_cents": 4_000})
        for _ in range(40):  # a lot about once in four units: no lot in 40 is ~1e-5
            if post("/plays", {"stake_cents": 100, "mode": "auto"})["prize_cents"]:
                return email
    raise AssertionError("no lot in 40 Auto plays")


def test_errors_are_said_in_french(
    far_console: Page, server: Server, admins: dict[str, str]
) -> None:
    page = far_console
    log_in(page, ADMINS[0], admins[ADMINS[0]])
    loaded = server.blocks_dir / "block-100-1.parquet"  # the server's own, loaded at its start
    page.set_input_files("#upload-file", str(loaded))
    posted = "/api/v1/operator/blocks"
    with page.expect_response(
        lambda r: r.url.endswith(posted) and r.request.method == "POST"
    ) as answer:
        page.locator("#upload-submit").click()
    assert answer.value.status == 409
    assert "is already loaded" in answer.value.json()["detail"]  # the server's words stay
    message = page.locator("#message")
    expect(message).to_contain_text(
        re.compile(
            rf"Fichier de bloc refusé : le bloc \S+ est déjà chargé \(n° {server.blocks[100]}\)\."
        )
    )
    expect(message).not_to_contain_text("already")
    expect(message).not_to_contain_text("Erreur 409")


def test_ledger_kinds_and_times_in_paris(
    far_console: Page, server: Server, admins: dict[str, str]
) -> None:
    page = far_console
    player = _player_with_an_auto_lot(server)
    log_in(page, ADMINS[1], admins[ADMINS[1]])
    tab(page, "Ventes")
    expect(page.locator("#times-note")).to_contain_text("heure de Paris")
    expect(page.locator("#times-note")).to_contain_text("minuit à minuit UTC")

    tab(page, "Joueurs")
    page.fill("#players-email", player)
    page.locator("#players-submit").click()
    page.locator("#players-rows tr").get_by_role("button").click()
    expect(page.locator("#file-title")).to_contain_text(player)
    found = operator_get(page, f"/players?email={quote(player)}")
    file = operator_get(page, f"/players/{found[0]['player_id']}")

    rows = page.locator("#file-ledger tbody tr")
    expect(rows).to_have_count(len(file["ledger"]))
    expected = {
        ("deposit", True): "Dépôt",
        ("purchase", False): "Mise",
        ("purchase", True): "Lot (partie Auto)",
    }
    shown: set[str] = set()
    for index, entry in enumerate(file["ledger"]):
        cells = rows.nth(index).locator("td")
        want = expected[(entry["kind"], entry["amount_cents"] > 0)]
        expect(cells.nth(2)).to_have_text(want)
        expect(cells.nth(3)).to_have_text(format_cents(entry["amount_cents"]))
        # The time of the entry in Paris, not New York, not UTC.
        paris = datetime.fromisoformat(entry["created_at"]).astimezone(PARIS)
        expect(cells.nth(1)).to_have_text(paris.strftime("%d/%m/%Y %H:%M"))
        shown.add(want)
    assert shown == set(expected.values())  # a deposit, stakes and an Auto lot were all there
    texts = page.locator("#file-ledger tbody td.kind").all_inner_texts()
    assert not RAW_KINDS & set(texts)


def _pace(hours: float | None) -> str:
    """What the console says of a stock lasting ``hours`` (operator/js/i18n.js formatPace)."""
    if hours is None:
        return "—"
    if hours < 48:
        text = f"{hours:.1f}".replace(".", ",")
        return f"{text.removesuffix(',0')} h"
    if hours < 365 * 24:
        return f"{int(hours // 24)} j"
    return "plus d'un an"


def test_the_stock_and_its_alerts_in_french(
    far_console: Page, server: Server, admins: dict[str, str]
) -> None:
    page = far_console
    log_in(page, ADMINS[2], admins[ADMINS[2]])
    watch = operator_get(page, "/stock")
    rows = page.locator("#stock-rows tr")
    expect(rows).to_have_count(len(watch["stock"]))
    for index, line in enumerate(watch["stock"]):
        cells = rows.nth(index).locator("td")
        expect(cells.nth(0)).to_have_text(f"{line['price_cents'] // 100} €")
        expect(cells.nth(1)).to_have_text(str(line["on_sale"]))
        expect(cells.nth(4)).to_have_text(str(line["sold_last_day"]))
    # The test blocks hold far fewer than 100,000 units: every price is low.
    low = [a for a in watch["alerts"] if a["kind"] == "low_stock"]
    assert len(low) == len(watch["stock"]) > 0
    shown = page.locator("#alerts li[data-kind=low_stock]")
    expect(shown).to_have_count(len(low))
    for index, alert in enumerate(low):
        line = next(x for x in watch["stock"] if x["price_cents"] == alert["price_cents"])
        units = line["on_sale"] + line["units_behind"]
        price = f"{alert['price_cents'] // 100}\u00a0€"
        expect(shown.nth(index)).to_contain_text(f"Stock bas à {price} : {units} unités restantes")
    expect(page.locator("#alerts")).not_to_contain_text("units left")
    # How long each stock lasts: hours up to two days, then days, then "more than a year"
    # (a pace of a few sales a day no longer reads « 2999976,0 »); counts with their thousands.
    for index, line in enumerate(watch["stock"]):
        expect(rows.nth(index).locator("td").nth(5)).to_have_text(_pace(line["hours_left"]))
    said = page.evaluate(
        "import('/static/operator/js/i18n.js').then((m) => [m.formatCount(1000000), "
        "m.formatPace(2999976), m.formatPace(31.46), m.formatPace(100), m.formatPace(null)])"
    )
    assert said == ["1\u202f000\u202f000", "plus d'un an", "31,5 h", "4 j", "—"]


def _words(text: str) -> set[str]:
    """The words of ``text`` (three letters or more, accents included), in lower case, its
    placeholders and e-mail addresses left out."""
    text = re.sub(r"\{\w+\}|\S+@\S+", " ", text)
    return {w.lower() for w in re.findall(r"[^\W\d_]{3,}", text)}


def _english(*more: str) -> set[str]:
    """Words of the console's English, of the audit's English and of ``more`` that its French
    never uses: one on a French screen is English left over."""
    texts = dictionary()
    english = [
        *texts["en"].values(),
        *findings.ENGLISH.values(),
        *findings.CHECKS.values(),
        *(word for words in findings.WORDS.values() for word in words.values()),
        *more,
    ]
    return _words(" ".join(english)) - _words(" ".join(texts["fr"].values()))


def _in_french(page: Page, screen: str, english: set[str]) -> str:
    """Fail if ``screen`` shows an English word, a raw code or a JSON escape; its text."""
    text = str(page.evaluate(SHOWN_TEXT))
    readable = re.sub(r"\S+@\S+", " ", text)
    assert not RAW_CODE.findall(readable), f"{screen}: codes {RAW_CODE.findall(readable)}"
    assert "\\u00" not in text, f"{screen}: escapes in {text!r}"
    left = sorted(_words(readable) & english)
    assert not left, f"{screen}: English words {left} in {text!r}"
    return text


def test_every_screen_of_the_console_is_in_french(
    far_console: Page, server: Server, admins: dict[str, str]
) -> None:
    """Each view, a block's verification, a player's file and the audit's check, read for a
    word of English (the server's labels and checks included) or a code."""
    page = far_console
    player = _player_with_an_auto_lot(server)
    block_id = server.load_block(300, server.blocks[300] + 400, approve=False)
    try:
        log_in(page, ADMINS[3], admins[ADMINS[3]])
        verification = operator_get(page, f"/blocks/{block_id}/verification")
        labels = [x["label"] for x in verification["fairness"]["measures"]]
        labels += [x["label"] for x in verification["fairness"]["order"]]
        english = _english(*labels)
        assert {"ledger", "chain", "among", "correlation", "records"} <= english  # the net
        expect(page.locator("#stock-rows tr").first).to_be_visible()
        _in_french(page, "Blocs", english)

        page.locator(f'#blocks-rows tr[data-block-id="{block_id}"] .verify-block').click()
        panel = page.locator("#verification")
        expect(panel).to_be_visible(timeout=30_000)  # the first verification imports numba
        measures = panel.locator(".verification-measures tbody tr")
        expect(measures).to_have_count(len(verification["fairness"]["measures"]))
        expect(measures.first.locator("td").first).to_have_text(
            "Lignes loin des combinaisons gagnantes portant exactement trois fois un même symbole"
        )
        expect(panel).to_contain_text("Pyramide parmi les cases de la grille 2")
        expect(panel).to_contain_text("Corrélation sérielle des gains, décalage 1")
        _in_french(page, "Vérification", english)
        panel.locator(".verification-close").click()

        # A block that fails: the count said in French, the server's sentences (English, as
        # `pharaon verify` writes them) folded under a technical detail, marked as English.
        said = ["units_sha256 of the stored units differs from the block's"]
        failed = {**verification, "ok": False, "problems": said}
        answer = f"**/api/v1/operator/blocks/{block_id}/verification"
        page.route(answer, lambda route: route.fulfill(json=failed))
        page.locator(f'#blocks-rows tr[data-block-id="{block_id}"] .verify-block').click()
        expect(panel.locator(".verdict")).to_have_text(
            "Non conforme : ce bloc ne peut pas être approuvé."
        )
        detail = panel.locator("details.problems")
        expect(detail.locator("summary")).to_contain_text("1 problème(s) trouvé(s)")
        _in_french(page, "Vérification non conforme", english)
        detail.locator("summary").click()
        expect(detail.locator("ul[lang=en] li")).to_have_text(said)
        page.unroute(answer)
        panel.locator(".verification-close").click()

        tab(page, "Ventes")
        expect(page.locator("#times-note")).to_be_visible()
        _in_french(page, "Ventes", english)

        tab(page, "Joueurs")
        page.fill("#players-email", player)
        page.locator("#players-submit").click()
        page.locator("#players-rows tr").get_by_role("button").click()
        expect(page.locator("#file-title")).to_contain_text(player)
        _in_french(page, "Dossier du joueur", english)

        tab(page, "Retraits")
        _in_french(page, "Retraits", english)

        tab(page, "Audit")
        page.select_option("#audit-limit", "100")
        total = operator_get(page, "/audit?limit=1")["total"]
        expect(page.locator("#audit-rows tr")).to_have_count(min(100, total))
        shown = set(page.locator("#audit-rows td.kind").evaluate_all(
            "cells => cells.map((c) => c.dataset.kind)"
        ))  # fmt: skip
        assert {"purchase", "deposit", "account_opened", "block_loaded"} <= shown
        payloads = page.locator("#audit-rows td.payload").all_inner_texts()
        assert not [p for p in payloads if "\\u" in p]
        page.locator("#audit-check").click()
        expect(page.locator("#audit-verdict")).to_have_text(
            "Tout est vérifié : la chaîne est intacte."
        )
        checks = page.locator("#audit-result li")
        expect(checks).to_have_count(len(findings.CHECKS))
        expect(page.locator('#audit-result li[data-code="audit_chain"]')).to_contain_text(
            "La chaîne d'audit est intacte — "
        )
        _in_french(page, "Audit", english)
    finally:
        server.cli("blocks", "deactivate", str(block_id), "--reason", "browser test")
