"""Playing through the page against the real server: Jouer at each stake, Auto, resuming."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from pharaon.game.money import format_cents
from tests.browser.conftest import PRICES, Server
from tests.browser.helpers import (
    api,
    api_post,
    board_codes,
    check_finished,
    choose_stake,
    deposit,
    log_in,
    press_buy,
    sign_up,
    tab,
    uncover,
    without_motion,
)

pytestmark = pytest.mark.browser


def test_sign_up_deposit_and_jouer_at_each_stake(page: Page) -> None:
    without_motion(page)  # what each stake charges and shows, not how it moves
    sign_up(page)
    expect(page.locator("#balance")).to_have_text(format_cents(0))
    deposit(page, "20")
    expect(page.locator("#balance")).to_have_text(format_cents(2000))
    assert api(page, "/me")["balance_cents"] == 2000
    tab(page, "Jeu")
    played = []
    for stake in PRICES:
        choose_stake(page, stake)
        before = api(page, "/me")["balance_cents"]
        bought = press_buy(page, "Jouer")
        assert bought["stake_cents"] == stake
        assert bought["mode"] == "jouer"
        assert bought["grids"] == [None, None, None, None]
        expect(page.locator("#play-holder button.cover")).to_have_count(4)
        # At once the stake is paid; the lot shows when the play is finished.
        expect(page.locator("#balance")).to_have_text(format_cents(before - stake))
        expect(page.locator("#balance-note")).to_contain_text("mise déduite")
        for grid in (1, 2, 3, 4):
            uncover(page, grid)
        expect(page.locator("#play-holder button.cover")).to_have_count(0)
        play = api(page, f"/plays/{bought['play_id']}")
        assert play["balance_before_cents"] == before
        check_finished(page, play)
        after = play["balance_after_cents"]
        assert after == before - stake + play["prize_cents"]
        expect(page.locator("#balance")).to_have_text(format_cents(after))
        assert api(page, "/me")["balance_cents"] == after
        played.append(play)

    tab(page, "Historique")
    rows = page.locator("#history-rows tr")
    expect(rows).to_have_count(3)
    for row, play in zip(rows.all(), reversed(played), strict=True):
        assert row.get_attribute("data-play-id") == str(play["play_id"])
        cells = row.locator("td")
        expect(cells.nth(1)).to_have_text({"jouer": "Jouer", "auto": "Auto"}[play["mode"]])
        expect(cells.nth(2)).to_have_text(f"{play['stake_cents'] // 100} €")
        expect(cells.nth(3)).to_have_text(format_cents(play["prize_cents"]))
        expect(cells.nth(4)).to_have_text(format_cents(play["balance_before_cents"]))
        expect(cells.nth(5)).to_have_text(format_cents(play["balance_after_cents"]))
    # Each unit viewable in full with its combinations marked.
    for play in played:
        page.get_by_role("button", name=f"Voir la partie n° {play['play_id']}").click()
        expect(page.locator("#history-detail .detail-head h3")).to_be_focused()
        check_finished(page, play, "#history-detail")
        expect(page.locator("#history-detail .ticket code")).to_have_text(play["ticket"])


def test_auto_uncovers_everything_and_marks_the_winning_combinations(page: Page) -> None:
    without_motion(page)  # what Auto uncovers and marks; its moment is test_scratch.py's
    sign_up(page)
    deposit(page, "40")
    tab(page, "Jeu")
    choose_stake(page, 100)
    seen_win = False
    for _ in range(40):  # about 28 % of a test block's units win: a win comes soon
        bought = press_buy(page, "Auto")
        assert bought["mode"] == "auto"
        assert bought["finished"]
        expect(page.locator("#play-holder .lot")).to_be_visible()
        expect(page.locator("#play-holder button.cover")).to_have_count(0)
        play = api(page, f"/plays/{bought['play_id']}")
        check_finished(page, play)
        expect(page.locator("#balance")).to_have_text(format_cents(play["balance_after_cents"]))
        if play["combinations"]:
            seen_win = True
            expect(page.locator("#play-holder .lot")).to_contain_text("Gagné")
            # Focusing a combination picks out its own cells (in the bonus grid too).
            first = play["combinations"][0]
            page.locator("#play-holder .combos li").first.focus()
            spotted = page.locator("#play-holder .cell.spot")
            expect(spotted).to_have_count(8 if first["kind"] == "bonus" else 4)
            page.locator("#play-holder .combos li").first.blur()
            expect(spotted).to_have_count(0)
            break
        expect(page.locator("#play-holder .lot")).to_have_text(
            "Pas de gain cette fois. Merci d'avoir joué !"
        )
    assert seen_win, "40 plays of a test block without a single win"


def test_reload_mid_game_resumes_where_it_stopped(
    page: Page, browser: Browser, server: Server
) -> None:
    without_motion(page)  # where the play stood, not how its grids came
    email = sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    choose_stake(page, 200)
    bought = press_buy(page, "Jouer")
    uncover(page, 1)
    uncover(page, 3)
    page.reload()
    expect(page.locator("#message")).to_contain_text("reprise")
    expect(page.get_by_role("button", name="Grille 2", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Grille 4", exact=True)).to_be_visible()
    expect(page.locator("#play-holder button.cover")).to_have_count(2)
    pid = bought["play_id"]
    grids = [api(page, f"/plays/{pid}/grids/{g}")["codes"] for g in (1, 2, 3, 4)]
    assert board_codes(page) == [grids[0], None, grids[2], None]
    expect(page.locator("#balance")).to_have_text(format_cents(500 - 200))  # the stake paid
    # Grids shown by reads: the server keeps the play as the purchase left it.
    assert api(page, f"/plays/{pid}")["grids"] == [None] * 4

    # Another browser, logged in afresh: the newest unfinished play comes back too, its grids
    # covered (this browser showed none of them); uncovered there, they are the same.
    other = browser.new_context(viewport={"width": 390, "height": 844}, base_url=server.url)
    try:
        second = other.new_page()
        second.goto("/")
        log_in(second, email)
        expect(second.locator("#play-holder button.cover")).to_have_count(4)
        without_motion(second)
        uncover(second, 3)
        assert board_codes(second) == [None, None, grids[2], None]
    finally:
        other.close()

    uncover(page, 4)
    uncover(page, 2)
    check_finished(page, api(page, f"/plays/{bought['play_id']}"))
    page.reload()  # a finished play stays on the board of its tab
    check_finished(page, api(page, f"/plays/{bought['play_id']}"))


def test_history_resumes_an_unfinished_play(page: Page) -> None:
    without_motion(page)  # the play taken up again, not its animations
    sign_up(page)
    deposit(page, "3")
    tab(page, "Jeu")
    bought = press_buy(page, "Jouer")
    uncover(page, 2)
    tab(page, "Historique")
    row = page.locator(f'#history-rows tr[data-play-id="{bought["play_id"]}"]')
    expect(row.locator("td").nth(3)).to_have_text("en cours")
    expect(row.locator("td").nth(5)).to_have_text("—")
    page.get_by_role("button", name=f"Reprendre la partie n° {bought['play_id']}").click()
    expect(page.locator("#view-game")).to_be_visible()
    expect(page.get_by_role("button", name="Grille 1", exact=True)).to_be_focused()
    for grid in (1, 3, 4):
        uncover(page, grid)
    check_finished(page, api(page, f"/plays/{bought['play_id']}"))


def test_a_new_play_waits_for_the_current_one(page: Page) -> None:
    sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    press_buy(page, "Jouer")
    page.get_by_role("button", name="Jouer", exact=True).click()
    expect(page.locator("#message")).to_contain_text("Découvrez d'abord")
    assert len(api(page, "/plays?limit=20")["plays"]) == 1


def test_english_switch_is_kept(page: Page) -> None:
    without_motion(page)  # the words, not the animations
    sign_up(page)
    deposit(page, "2")
    page.get_by_role("button", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    tab(page, "Game")
    bought = press_buy(page, "Play")
    expect(page.get_by_role("button", name="Grid 1", exact=True)).to_be_visible()
    page.reload()
    expect(page.locator("#tabs")).to_contain_text("History")
    for grid in (1, 2, 3, 4):
        uncover(page, grid, "Grid")
    play = api(page, f"/plays/{bought['play_id']}")
    lot = page.locator("#play-holder .lot")
    if play["prize_cents"]:
        expect(lot).to_have_text(f"You win! Your prize: {format_cents(play['prize_cents'])}")
    else:
        expect(lot).to_have_text("No win this time. Thanks for playing!")
    cell = page.locator('#play-holder [data-cell="1-1-1"]')
    names = {"P": "pharaoh", "Y": "pyramid", "O": "eye", "X": "cross", "J": "jackal", "S": "scarab"}
    expect(cell).to_have_attribute("aria-label", re.compile(f"^{names[play['grids'][0][0]]}"))
    tab(page, "Info")
    expect(page.locator("#symbols-table")).to_contain_text("pharaoh")
    page.get_by_role("button", name="Français").click()
    expect(page.locator("#symbols-table")).to_contain_text("pharaon")
    expect(page.locator("html")).to_have_attribute("lang", "fr")


def test_history_shows_the_last_ten_then_older_ones(page: Page) -> None:
    sign_up(page)
    deposit(page, "12")
    made = [api_post(page, "/plays", {"stake_cents": 100, "mode": "auto"}) for _ in range(12)]
    tab(page, "Historique")
    rows = page.locator("#history-rows tr")
    expect(rows).to_have_count(10)
    newest = [str(p["play_id"]) for p in reversed(made)]
    assert [r.get_attribute("data-play-id") for r in rows.all()] == newest[:10]
    # Bought with « Auto » (here through the API): the history says so.
    expect(rows.locator("td:nth-child(2)")).to_have_text(["Auto"] * 10)
    page.get_by_role("button", name="Parties plus anciennes").click()
    expect(rows).to_have_count(12)
    assert [r.get_attribute("data-play-id") for r in rows.all()] == newest
    expect(page.get_by_role("button", name="Parties plus anciennes")).to_be_hidden()
