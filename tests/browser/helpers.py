"""What a player does on the page, step by step, and how the page is read back."""

from __future__ import annotations

import re
import secrets
from typing import Any

from playwright.sync_api import Page, Response, expect

from pharaon.game.evaluate import Evaluation, evaluate
from pharaon.game.money import format_cents
from pharaon.game.unit import Unit
from tests.browser.conftest import Server

PASSWORD = "correct horse battery"


def new_email() -> str:
    return f"joueur-{secrets.token_hex(5)}@example.org"


def api(page: Page, path: str) -> Any:
    """GET an API route with the page's own session cookie."""
    response = page.request.get(f"/api/v1{path}")
    assert response.ok, f"GET {path}: {response.status} {response.text()}"
    return response.json()


def api_post(page: Page, path: str, body: Any) -> Any:
    """POST to the API as the page would: session cookie, CSRF header, a fresh key."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "pharaon_csrf")
    headers = {"X-CSRF-Token": token, "Idempotency-Key": secrets.token_hex(16)}
    response = page.request.post(f"/api/v1{path}", data=body, headers=headers)
    assert response.ok, f"POST {path}: {response.status} {response.text()}"
    return response.json()


def sign_up(
    page: Page,
    email: str | None = None,
    birth_date: str = "1990-05-17",
    *,
    moderators: tuple[str, str] | None = ("10000", "10000"),
) -> str:
    """Create an account through the form; the page logs in and opens the moderators' form,
    which this fills with ``moderators`` (weekly deposit and stake ceilings, in euros), then
    shows the game. ``moderators=None`` leaves the page on the form, none set."""
    email = email or new_email()
    page.fill("#signup-email", email)
    page.fill("#signup-password", PASSWORD)
    page.fill("#signup-birth", birth_date)
    page.get_by_role("button", name="Créer mon compte").click()
    expect(page.locator("#who")).to_have_text(email)
    expect(page.locator("#moderators-needed")).to_be_visible()
    if moderators is not None:
        set_moderators(page, *moderators)
        tab(page, "Jeu")
        expect(page.locator("#view-game")).to_be_visible()
    return email


def set_moderators(page: Page, deposits: str, stakes: str) -> None:
    """Fill and save the weekly deposit and stake ceilings (euros) in « Compte »."""
    tab(page, "Compte")
    page.fill("#limit-weekly", deposits)
    page.fill("#limit-stake_weekly", stakes)
    page.locator("#limits-submit").click()
    expect(page.locator("#message")).to_contain_text("Limites enregistrées")
    expect(page.locator("#moderators-needed")).to_be_hidden()


def log_in(page: Page, email: str) -> None:
    page.fill("#login-email", email)
    page.fill("#login-password", PASSWORD)
    page.locator("#login-submit").click()
    expect(page.locator("#view-game")).to_be_visible()


def tab(page: Page, name: str) -> None:
    page.locator("#tabs").get_by_role("button", name=name, exact=True).click()


def deposit(page: Page, euros: str, *, expect_ok: bool = True) -> None:
    tab(page, "Compte")
    page.fill("#deposit-amount", euros)
    page.get_by_role("button", name="Déposer", exact=True).click()
    if expect_ok:
        expect(page.locator("#message")).to_contain_text("Dépôt de")


def choose_stake(page: Page, stake_cents: int) -> None:
    page.locator(f'label[for="stake-{stake_cents}"]').click()
    expect(page.locator(f"#stake-{stake_cents}")).to_be_checked()


def is_buy(response: Response) -> bool:
    return response.request.method == "POST" and response.url.endswith("/api/v1/plays")


def press_buy(page: Page, button: str = "Jouer") -> Any:
    """Press « Jouer » or « Auto »; the Play the API answered."""
    press = page.get_by_role("button", name=button, exact=True)
    # Busy while the last play ends (a win's moment, the balance): a press then does nothing.
    expect(press).not_to_have_attribute("aria-disabled", "true")
    with page.expect_response(is_buy) as answer:
        press.click()
    assert answer.value.status == 201, answer.value.text()
    return answer.value.json()


def without_motion(page: Page) -> None:
    """Switch the page's animations off as a player who asks for reduced motion does: each
    grid, lot and combination then shows at once. For the tests that check what the page
    shows, not how it moves; test_scratch.py checks the animations themselves."""
    page.emulate_media(reduced_motion="reduce")


def settled(page: Page) -> None:
    """Wait until no animation or transition runs on the page (before a screenshot)."""
    page.wait_for_function("() => document.getAnimations().length === 0")


def next_unit(server: Server, play: Any) -> Evaluation | None:
    """The unit the next purchase at ``play``'s stake will get, evaluated, when the test block
    it comes from is known: on SQLite a block sells in serial order (service/runs.py), and the
    tests of one server buy one at a time. None past the block's end or for a block not made
    by ``server``."""
    block = server.made.get(play["block_id"])
    if block is None or play["serial"] >= block.size:
        return None
    cells = tuple(int(code) for code in block.units[play["serial"]])  # serial s + 1 is row s
    return evaluate(Unit(cells), play["stake_cents"])


def uncover(page: Page, grid: int, label: str = "Grille") -> None:
    page.get_by_role("button", name=f"{label} {grid}", exact=True).click()
    expect(
        page.locator("#play-holder").get_by_role("group", name=f"{label} {grid}")
    ).to_be_visible()


def board_codes(page: Page, root: str = "#play-holder") -> list[str | None]:
    """Each grid's 16 symbol codes as shown, or None while covered."""
    codes: list[str | None] = page.eval_on_selector(
        root,
        """root => [...root.querySelectorAll('.board .slot')].map(slot => {
             const cells = [...slot.querySelectorAll('.cell')];
             return cells.length ? cells.map(c => c.dataset.code).join('') : null;
           })""",
    )
    return codes


def bonus_codes(page: Page, root: str = "#play-holder") -> str:
    text: str = page.eval_on_selector(
        root,
        "root => [...root.querySelectorAll('.bonus-grid .cell')].map(c => c.dataset.code).join('')",
    )
    return text


def marked_cells(page: Page, root: str = "#play-holder") -> set[str]:
    """The board cells marked as winning, as 'grid-row-column'."""
    cells: list[str] = page.eval_on_selector(
        root, "root => [...root.querySelectorAll('.board .cell.win')].map(c => c.dataset.cell)"
    )
    return set(cells)


def marked_bonus_count(page: Page, root: str = "#play-holder") -> int:
    count: int = page.eval_on_selector(
        root, "root => root.querySelectorAll('.bonus-grid .cell.win').length"
    )
    return count


def expected_marks(play: Any) -> set[str]:
    return {f"{g}-{r}-{c}" for combo in play["combinations"] for g, r, c in combo["cells"]}


# Each grid's four cells in the board's central 4 × 4 (docs/rules.md).
BONUS = {
    1: [(3, 3), (3, 4), (4, 3), (4, 4)],
    2: [(3, 1), (3, 2), (4, 1), (4, 2)],
    3: [(1, 3), (1, 4), (2, 3), (2, 4)],
    4: [(1, 1), (1, 2), (2, 1), (2, 2)],
}


def check_finished(page: Page, play: Any, root: str = "#play-holder") -> None:
    """The page shows `play` (finished, from the API) in full: grids, bonus, marks, lot."""
    assert play["finished"], play
    holder = page.locator(root)
    lot = holder.locator(".lot")
    expect(lot).to_have_attribute("data-prize-cents", str(play["prize_cents"]))
    if play["prize_cents"]:
        expect(lot.locator(".amount")).to_have_text(format_cents(play["prize_cents"]))
    else:  # a kind line, with no "0,00 €" in it
        expect(lot).to_have_class(re.compile(r"\blost\b"))
        expect(lot).not_to_contain_text(format_cents(0))
    assert board_codes(page, root) == play["grids"]
    assert bonus_codes(page, root) == play["bonus"]
    assert marked_cells(page, root) == expected_marks(play)
    bonus_cells = sum(4 for combo in play["combinations"] if combo["kind"] == "bonus")
    assert marked_bonus_count(page, root) == bonus_cells
    # The board's centre is marked where the rules (GET /rules) put the bonus grid.
    zone = page.eval_on_selector(
        root, "root => [...root.querySelectorAll('.cell.bonus-zone')].map(c => c.dataset.cell)"
    )
    assert sorted(zone) == sorted(f"{g}-{r}-{c}" for g in (1, 2, 3, 4) for r, c in BONUS[g])
    expect(holder.locator(".combos li")).to_have_count(len(play["combinations"]))


def balance_text(cents: int) -> str:
    return format_cents(cents)
