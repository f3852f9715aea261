"""Scratching « Jouer » grids, sounds and a win's moment (issue 29, item 1), in Chromium.

A grid is scratched with the mouse at 1280 px and with a finger at 390 px (touch events sent
through the DevTools protocol, as a touch screen sends them); a click and the keyboard still
uncover at once. Sound is off until switched on, and the switch is kept. A win lights its
combinations one after another while the lot counts up to its exact amount; a loss says a kind
line; under prefers-reduced-motion all of it is there at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from pharaon.game.evaluate import Evaluation
from pharaon.game.money import format_cents
from tests.browser.conftest import Server
from tests.browser.helpers import api, check_finished, deposit, next_unit, press_buy, sign_up, tab

pytestmark = pytest.mark.browser

LOSS_FR = "Pas de gain cette fois. Merci d'avoir joué !"

# Records, on the page, what the result does as it comes: each text of the lot's amount, each
# step of data-lit (with its time) and whether the combinations came one by one.
WATCH_MOMENT = """
() => {
  const seen = { amounts: [], lit: [], celebrating: false };
  window.__moment = seen;
  const holder = document.getElementById("play-holder");
  new MutationObserver((records) => {
    const now = performance.now();
    for (const record of records) {
      const node = record.target;
      if (record.attributeName === "data-lit") seen.lit.push([node.dataset.lit, now]);
      if (record.attributeName === "class" && node.classList.contains("celebrating")) {
        seen.celebrating = true;
      }
    }
    const amount = holder.querySelector(".lot .amount");
    if (amount && seen.amounts.at(-1) !== amount.textContent) {
      seen.amounts.push(amount.textContent);
    }
  }).observe(holder, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ["data-lit", "class"],
  });
}
"""


def _cover(page: Page, grid: int) -> Any:
    return page.locator(f'#play-holder .slot[data-grid="{grid}"] canvas.scratch-cover')


def _share(page: Page, grid: int) -> float | None:
    """The share of grid `grid`'s cover cleared, or None once it is gone (uncovered)."""
    share: str | None = page.evaluate(
        """(grid) => document.querySelector(
             `#play-holder .slot[data-grid="${grid}"] canvas.scratch-cover`
           )?.dataset.scratchedShare ?? null""",
        grid,
    )
    return None if share is None else float(share)


def _uncovered(page: Page, grid: int) -> Any:
    return page.locator("#play-holder").get_by_role("group", name=f"Grille {grid}")


def _wait_share_above(page: Page, grid: int, share: float) -> None:
    """Until grid `grid` is uncovered or its cover says more than `share` cleared."""
    page.wait_for_function(
        """([grid, share]) => {
             const slot = document.querySelector(`#play-holder .slot[data-grid="${grid}"]`);
             const cover = slot.querySelector("canvas.scratch-cover");
             return !cover || Number(cover.dataset.scratchedShare) > share;
           }""",
        arg=[grid, share],
    )


def _mouse_stroke(page: Page, grid: int, at: float) -> None:
    """One stroke with the button down, left to right across the cover, `at` its height."""
    box = _cover(page, grid).bounding_box()
    assert box is not None
    y = box["y"] + box["height"] * at
    page.mouse.move(box["x"] + 3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 3, y, steps=12)
    page.mouse.up()


def _scratch_open(page: Page, grid: int, stroke: Any) -> list[float]:
    """Stroke across grid `grid` (top to bottom) until it is uncovered; the shares seen."""
    shares: list[float] = []
    # Half way down last: the tests' first stroke, when there is one, went there.
    for at in (0.1, 0.3, 0.7, 0.9, 0.5, 0.2, 0.4, 0.6, 0.8):
        before = _share(page, grid)
        if before is None:
            break
        stroke(page, grid, at)
        _wait_share_above(page, grid, before)
        share = _share(page, grid)
        if share is not None:
            shares.append(share)
    expect(_uncovered(page, grid)).to_be_visible()
    return shares


def _reveals(page: Page) -> list[int | list[int]]:
    """What the page asked of the server for its grids, in order, as it was sent: a grid read
    (GET /plays/{id}/grids/{grid}) as its number, a reveal (POST /plays/{id}/reveal) as the
    list of grids it uncovers."""
    sent: list[int | list[int]] = []

    def seen(request: Request) -> None:
        read = re.search(r"/plays/\d+/grids/(\d+)$", request.url)
        if request.method == "GET" and read:
            sent.append(int(read.group(1)))
        body = request.post_data_json
        if request.method == "POST" and request.url.endswith("/reveal") and body:
            sent.append(body["grids"] if "grids" in body else [body["grid"]])

    page.on("request", seen)
    return sent


def _sent_so_far(page: Page) -> None:
    """Until every request the page's last input made it send has been seen (page.on): a page
    sends its requests in the order it makes them, so once a request made now has its answer,
    those made before it have gone out."""
    with page.expect_response(lambda response: response.url.endswith("/api/v1/health")):
        page.evaluate("() => { fetch('/api/v1/health'); }")


def _ready_to_play(page: Page, euros: str) -> None:
    sign_up(page)
    deposit(page, euros)
    tab(page, "Jeu")


def _auto_until(page: Page, *, won: bool, combos: int = 1, tries: int = 60) -> Any:
    """Press « Auto » (the moment watched) until a play that won with at least `combos`
    combinations, or lost; the play, once the page has shown it to its end."""
    for _ in range(tries):
        page.evaluate(WATCH_MOMENT)
        play = press_buy(page, "Auto")
        # The ref line comes with the new board: from here on, .lot is this play's.
        expect(page.locator("#play-ref")).to_contain_text(f"n° {play['play_id']} ")
        lot = page.locator("#play-holder .lot")
        expect(lot).to_be_visible()
        if play["prize_cents"]:
            expect(lot.locator(".amount")).to_have_text(format_cents(play["prize_cents"]))
        expect(lot).to_be_focused()  # the moment is over
        if won and len(play["combinations"]) >= combos:
            return play
        if not won and not play["prize_cents"]:
            return play
    raise AssertionError(f"no {'win' if won else 'loss'} in {tries} Auto plays")


def _pass_over(page: Page, server: Server, play: Any, wanted: Callable[[Evaluation], bool]) -> None:
    """After `play`, press « Auto » under reduced motion (each play shown at once) while the
    unit the next press gets is known (next_unit) and not `wanted`; the motion back on after.
    The plays a test need not watch cost a request each instead of their animations."""
    page.emulate_media(reduced_motion="reduce")
    coming = next_unit(server, play)
    while coming is not None and not wanted(coming):
        play = press_buy(page, "Auto")
        expect(page.locator("#play-ref")).to_contain_text(f"n° {play['play_id']} ")
        expect(page.locator("#play-holder .lot")).to_be_focused()
        coming = next_unit(server, play)
    page.emulate_media(reduced_motion="no-preference")


def _moment(page: Page) -> Any:
    return page.evaluate("window.__moment")


def _cents(text: str) -> int:
    return int(re.sub(r"\D", "", text))


def test_scratch_with_the_mouse_click_and_keys_still_uncover(page: Page) -> None:
    _ready_to_play(page, "5")
    sent = _reveals(page)
    bought = press_buy(page, "Jouer")
    expect(_cover(page, 1)).to_be_visible()
    expect(_cover(page, 1)).to_have_attribute("data-scratched-share", "0")

    # One stroke clears a band, not half: the grid stays covered, and the click that ends
    # the stroke is not taken for a click on the grid.
    _mouse_stroke(page, 1, 0.5)
    _wait_share_above(page, 1, 0)
    first = _share(page, 1)
    assert first is not None
    assert 0.1 < first < 0.5, first
    _sent_so_far(page)
    expect(page.locator("#play-holder button.cover")).to_have_count(4)
    assert sent == []

    shares = [first, *_scratch_open(page, 1, _mouse_stroke)]
    assert shares == sorted(shares), shares  # it only grows
    assert len(shares) >= 2
    expect(page.locator("#play-holder button.cover")).to_have_count(3)
    _scratch_open(page, 2, _mouse_stroke)
    # A plain click and the keyboard uncover at once, as before.
    page.get_by_role("button", name="Grille 3", exact=True).click()
    expect(_uncovered(page, 3)).to_be_visible()
    page.get_by_role("button", name="Grille 4", exact=True).focus()
    page.keyboard.press("Space")
    expect(_uncovered(page, 4)).to_be_visible()

    play = api(page, f"/plays/{bought['play_id']}")
    check_finished(page, play)
    # Three grids read, then one write that ends the play (its lot moves then).
    assert sent == [1, 2, 3, [1, 2, 3, 4]], sent


def test_scratch_with_a_finger_on_a_phone(browser: Browser, server: Server) -> None:
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
        base_url=server.url,
    )
    context.set_default_timeout(15_000)
    errors: list[str] = []
    try:
        phone = context.new_page()
        phone.on("pageerror", lambda error: errors.append(str(error)))
        phone.goto("/")
        _ready_to_play(phone, "5")
        sent = _reveals(phone)
        bought = press_buy(phone, "Jouer")
        phone.evaluate(
            """() => {
                 window.__pointers = new Set();
                 document.addEventListener("pointermove", (e) => __pointers.add(e.pointerType));
               }"""
        )
        cdp = context.new_cdp_session(phone)

        def touch(kind: str, points: list[tuple[float, float]]) -> None:
            touch_points = [{"x": x, "y": y} for x, y in points]
            cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": touch_points})

        def swipe(x0: float, x1: float, y: float) -> None:
            touch("touchStart", [(x0, y)])
            for step in range(1, 13):
                # At a finger's pace: sent all at once, a swipe is a fling to Chromium, and
                # the tap after a fling only stops it (no click).
                phone.wait_for_timeout(16)
                touch("touchMove", [(x0 + (x1 - x0) * step / 12, y)])
            touch("touchEnd", [])

        def finger_stroke(page: Page, grid: int, at: float) -> None:
            box = _cover(page, grid).bounding_box()
            assert box is not None
            swipe(box["x"] + 3, box["x"] + box["width"] - 3, box["y"] + box["height"] * at)

        _cover(phone, 1).scroll_into_view_if_needed()
        # One finger across the top row rubs both grids, as on a card.
        one = _cover(phone, 1).bounding_box()
        two = _cover(phone, 2).bounding_box()
        assert one is not None
        assert two is not None
        swipe(one["x"] + 3, two["x"] + two["width"] - 3, one["y"] + one["height"] * 0.5)
        _wait_share_above(phone, 2, 0)
        for grid in (1, 2):
            share = _share(phone, grid)
            assert share is not None
            assert 0.1 < share < 0.5, (grid, share)
        assert phone.evaluate("[...window.__pointers]") == ["touch"]
        expect(phone.locator("#play-holder button.cover")).to_have_count(4)

        for grid in (1, 2, 3, 4):
            _cover(phone, grid).scroll_into_view_if_needed()
            _scratch_open(phone, grid, finger_stroke)
        check_finished(phone, api(phone, f"/plays/{bought['play_id']}"))
        assert sent == [1, 2, 3, [1, 2, 3, 4]], sent
        # A tap is a click: it uncovers at once.
        bought = press_buy(phone, "Jouer")
        phone.get_by_role("button", name="Grille 1", exact=True).tap()
        expect(_uncovered(phone, 1)).to_be_visible()
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def _wins(unit: Evaluation) -> bool:
    return unit.prize_cents > 0


def test_sounds_are_off_until_switched_on_and_the_switch_is_kept(
    page: Page, server: Server
) -> None:
    _ready_to_play(page, "60")
    switch = page.get_by_role("switch", name="Sons")
    expect(switch).not_to_be_checked()
    assert page.evaluate("localStorage.getItem('pharaon.sound')") is None

    # Off: a scratch and a win play nothing.
    played = press_buy(page, "Jouer")
    _scratch_open(page, 1, _mouse_stroke)
    for grid in (2, 3, 4):
        page.get_by_role("button", name=f"Grille {grid}", exact=True).click()
    expect(page.locator("#play-holder .lot")).to_be_focused()
    _pass_over(page, server, played, _wins)
    _auto_until(page, won=True)
    assert page.evaluate("document.body.dataset.soundPlayed") is None

    switch.check()
    assert page.evaluate("localStorage.getItem('pharaon.sound')") == "on"
    page.reload()
    expect(page.get_by_role("switch", name="Sons")).to_be_checked()

    # On (after the reload, a press wakes the sound): the rasp, then the chime.
    played = press_buy(page, "Jouer")
    _mouse_stroke(page, 1, 0.5)
    expect(page.locator("body")).to_have_attribute("data-sound-played", "scratch")
    _scratch_open(page, 1, _mouse_stroke)
    for grid in (2, 3, 4):
        page.get_by_role("button", name=f"Grille {grid}", exact=True).click()
    expect(page.locator("#play-holder .lot")).to_be_focused()
    _pass_over(page, server, played, _wins)
    played = _auto_until(page, won=True)
    expect(page.locator("body")).to_have_attribute("data-sound-played", "win")
    count = int(page.evaluate("document.body.dataset.soundCount"))
    assert count >= 2

    # Off again: nothing more.
    page.get_by_role("switch", name="Sons").uncheck()
    assert page.evaluate("localStorage.getItem('pharaon.sound')") == "off"
    _pass_over(page, server, played, _wins)
    _auto_until(page, won=True)
    assert int(page.evaluate("document.body.dataset.soundCount")) == count


def test_a_win_has_its_moment_and_a_loss_a_kind_line(page: Page, server: Server) -> None:
    _ready_to_play(page, "60")
    lost = _auto_until(page, won=False)
    lot = page.locator("#play-holder .lot")
    expect(lot).to_have_text(LOSS_FR)
    expect(lot).to_have_class(re.compile(r"\blost\b"))
    check_finished(page, api(page, f"/plays/{lost['play_id']}"))

    _pass_over(page, server, lost, lambda unit: len(unit.combinations) >= 2)
    won = _auto_until(page, won=True, combos=2)
    final = format_cents(won["prize_cents"])
    expect(lot).to_have_text(f"Gagné ! Votre lot : {final}")
    moment = _moment(page)
    # The amount counted up from 0, never down, and ends on the lot itself.
    amounts = moment["amounts"]
    assert amounts[0] == format_cents(0), amounts
    assert amounts[-1] == final, amounts
    assert len(amounts) >= 4, amounts
    values = [_cents(text) for text in amounts]
    assert values == sorted(values), amounts
    # The combinations lit one after another, in the order the result lists them.
    steps = moment["lit"]
    assert [n for n, _ in steps] == [str(i) for i in range(1, len(won["combinations"]) + 1)]
    times = [at for _, at in steps]
    assert all(b - a >= 250 for a, b in pairwise(times)), times
    assert moment["celebrating"]
    expect(page.locator("#play-holder .play")).not_to_have_class(re.compile("celebrating"))
    marked = page.locator("#play-holder .board .cell.win")
    expect(page.locator("#play-holder .board .cell.win.lit")).to_have_count(marked.count())
    check_finished(page, api(page, f"/plays/{won['play_id']}"))


def test_reduced_motion_uncovers_and_tells_the_lot_at_once(page: Page) -> None:
    page.emulate_media(reduced_motion="reduce")
    _ready_to_play(page, "60")
    bought = press_buy(page, "Jouer")
    page.get_by_role("button", name="Grille 1", exact=True).click()
    expect(_uncovered(page, 1)).to_be_visible()
    assert page.locator("#play-holder .scratch").count() == 0  # no cover drawn open
    # Scratching still works; past half, the cover goes at once (no fade).
    _scratch_open(page, 2, _mouse_stroke)
    for grid in (3, 4):
        page.get_by_role("button", name=f"Grille {grid}", exact=True).click()
        expect(_uncovered(page, grid)).to_be_visible()
    check_finished(page, api(page, f"/plays/{bought['play_id']}"))

    won = _auto_until(page, won=True, combos=2)
    moment = _moment(page)
    assert moment["amounts"] == [format_cents(won["prize_cents"])]
    assert [n for n, _ in moment["lit"]] == [str(len(won["combinations"]))]
    assert not moment["celebrating"]
