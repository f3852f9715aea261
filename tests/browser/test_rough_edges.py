"""Rough edges found by trying the page (issue 29, item 3), each checked in Chromium from real
computed styles and boxes: the reality check's dialog and its setting readable (WCAG contrast
at least 4.5), the prize table whole on a phone, and the API docs served without internet."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import Server
from tests.browser.helpers import deposit, press_buy, sign_up, tab

pytestmark = pytest.mark.browser

# The contrast of an element's text against the first opaque background up its tree (WCAG 2.x
# relative luminance); an opaque colour is assumed where none is set (the canvas, white).
CONTRAST = """
(node) => {
  const parse = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const lin = (c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const fg = parse(getComputedStyle(node).color);
  let bg = [255, 255, 255];
  for (let at = node; at; at = at.parentElement) {
    const c = parse(getComputedStyle(at).backgroundColor);
    if (c.length < 4 || c[3] > 0.99) { bg = c; break; }
  }
  const [a, b] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}
"""


# The words of a node's text that the layout broke over two lines or more.
BROKEN_WORDS = """
(root) => {
  const broken = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (const word of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
  return broken;
}
"""


# Collects the page's CSP violations (an init script is the browser's, not the page's).
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


def _contrast(page: Page, selector: str) -> float:
    return float(page.locator(selector).evaluate(CONTRAST))


def test_the_reality_check_is_readable(page: Page) -> None:
    sign_up(page)  # and logged in
    page.evaluate("document.getElementById('reality-dialog').showModal()")
    for selector in ("#reality-dialog-title", "#reality-time", "#reality-net"):
        page.locator(selector).evaluate("n => { if (!n.textContent) n.textContent = 'texte' }")
        ratio = _contrast(page, selector)
        assert ratio >= 4.5, (selector, ratio)
    page.evaluate("document.getElementById('reality-dialog').close()")
    tab(page, "Compte")
    select = page.locator("#reality-minutes")
    expect(select).to_be_visible()
    assert _contrast(page, "#reality-minutes") >= 4.5
    # Styled as the page's inputs: their height and border, not the browser's.
    looks = "n => [getComputedStyle(n).minHeight, getComputedStyle(n).borderTopWidth]"
    assert select.evaluate(looks) == page.locator("#deposit-amount").evaluate(looks)


def test_the_prize_table_fits_a_phone(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=server.url)
    try:
        phone = context.new_page()
        phone.goto("/")
        phone.locator("#tabs").get_by_role("button", name="Infos").click()
        # The section is drawn twice: at once, then with what is left in the blocks.
        expect(phone.locator("#remaining-tables table").first).to_be_visible()
        headers = phone.locator("#prizes-table thead th")
        expect(headers).to_have_count(5)
        expect(headers.nth(3)).to_contain_text("3")
        for index in range(5):
            box = headers.nth(index).bounding_box()
            assert box is not None
            assert box["x"] >= 0
            assert box["x"] + box["width"] <= 390, (index, box)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        # Whole in its frame (nothing to scroll sideways), and no word cut over two lines.
        table = phone.locator("#prizes-table")
        assert table.evaluate("n => n.scrollWidth <= n.clientWidth"), "the table overflows"
        assert table.evaluate(BROKEN_WORDS) == []
    finally:
        context.close()


def test_the_api_docs_need_no_internet(page: Page, server: Server) -> None:
    """/api/docs is Swagger UI served by the server itself (swagger-ui-bundle's files): every
    operation listed, the docstrings' ``code`` rendered, and « Try it out » runs a request
    against this server; nothing asked from outside, nothing the CSP refuses."""
    outside: list[str] = []

    def only_ours(route: Route) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_ours)
    page.add_init_script(WATCH_CSP)
    page.goto("/api/docs")
    plays = page.locator(".opblock.opblock-post", has=page.locator('[data-path="/api/v1/plays"]'))
    expect(plays).to_be_visible()
    document = page.request.get("/api/v1/openapi.json").json()
    operations = sum(
        method in ("get", "post", "put", "patch", "delete")
        for item in document["paths"].values()
        for method in item
    )
    expect(page.locator(".opblock")).to_have_count(operations)
    expect(page.locator("#swagger-ui")).not_to_contain_text("``")

    rules = page.locator(".opblock.opblock-get", has=page.locator('[data-path="/api/v1/rules"]'))
    rules.locator(".opblock-summary").first.click()
    rules.get_by_role("button", name="Try it out").click()
    with page.expect_response(lambda r: r.url.endswith("/api/v1/rules")) as answer:
        rules.get_by_role("button", name="Execute").click()
    assert answer.value.status == 200
    live = rules.locator(".live-responses-table tbody .response-col_status")
    expect(live).to_contain_text("200")
    expect(rules.locator(".live-responses-table tbody .response-col_description")).to_contain_text(
        "bonus_shapes"
    )
    assert outside == []
    assert page.evaluate("window.__csp") == []


def test_what_was_said_on_a_tab_goes_with_it(page: Page) -> None:
    """« Partie reprise… » is the game's: another tab does not keep it; an error stays."""
    sign_up(page)
    deposit(page, "20")
    tab(page, "Jeu")
    press_buy(page, "Jouer")
    page.reload()
    message = page.locator("#message")
    expect(message).to_contain_text("Partie reprise")
    tab(page, "Historique")
    expect(message).to_be_hidden()
    deposit(page, "0", expect_ok=False)
    expect(message).to_have_class(re.compile(r"\berror\b"))
    tab(page, "Infos")
    expect(message).to_be_visible()
