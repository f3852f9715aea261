"""Each error said plainly on the page, and one press never charging twice."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, Request, Route, expect

from pharaon.game.money import format_cents
from tests.browser.conftest import Server
from tests.browser.helpers import (
    PASSWORD,
    api,
    check_finished,
    choose_stake,
    deposit,
    new_email,
    press_buy,
    sign_up,
    tab,
    uncover,
)

pytestmark = pytest.mark.browser


def _is_buy_url(url: str) -> bool:
    return urlparse(url).path == "/api/v1/plays"


def _jouer(page: Page) -> None:
    page.get_by_role("button", name="Jouer", exact=True).click()


def _until(page: Page, done: Callable[[], bool], what: str, seconds: float = 15) -> None:
    """Let the page run until ``done()``, which reads what its events record."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds} s for {what}")
        page.wait_for_timeout(20)  # the page's events are taken in while it is waited on


def test_short_balance(page: Page) -> None:
    sign_up(page)
    tab(page, "Jeu")
    choose_stake(page, 300)
    _jouer(page)
    expect(page.locator("#message")).to_contain_text("Solde insuffisant")
    expect(page.locator("#balance")).to_have_text(format_cents(0))
    assert api(page, "/plays?limit=20")["plays"] == []


def test_deposit_limit_reached(page: Page) -> None:
    sign_up(page)
    tab(page, "Compte")
    page.fill("#limit-daily", "10")
    page.get_by_role("button", name="Enregistrer les limites").click()
    expect(page.locator("#message")).to_contain_text("Limites enregistrées")
    assert api(page, "/me")["limits"]["daily_cents"] == 1000
    deposit(page, "6")
    deposit(page, "5", expect_ok=False)
    expect(page.locator("#message")).to_contain_text("Limite de dépôt atteinte")
    expect(page.locator("#balance")).to_have_text(format_cents(600))
    assert api(page, "/me")["balance_cents"] == 600
    # A raised limit waits 24 h, and the page says so.
    page.fill("#limit-daily", "20")
    page.get_by_role("button", name="Enregistrer les limites").click()
    expect(page.locator("#limits-pending")).to_contain_text(f"par jour : {format_cents(2000)}")
    expect(page.locator("#limit-daily")).to_have_value("10,00")


def test_self_excluded(page: Page) -> None:
    sign_up(page)
    deposit(page, "5")
    page.fill("#exclusion-days", "1")
    page.get_by_role("button", name="M'exclure").click()
    confirm = page.get_by_role("button", name="Confirmer l'exclusion de 1 jour(s)")
    expect(confirm).to_be_focused()
    confirm.click()
    expect(page.locator("#excluded")).to_contain_text("Vous êtes auto-exclu jusqu'au ")
    me = api(page, "/me")
    assert me["self_excluded_until"] is not None
    assert me["pause_kind"] == "self_exclusion"
    tab(page, "Jeu")
    _jouer(page)
    expect(page.locator("#message")).to_contain_text("Vous êtes auto-exclu jusqu'au ")
    deposit(page, "5", expect_ok=False)
    expect(page.locator("#message")).to_contain_text("Vous êtes auto-exclu jusqu'au ")
    assert api(page, "/plays?limit=20")["plays"] == []
    assert api(page, "/me")["balance_cents"] == 500


def test_sold_out(page: Page, server: Server) -> None:
    sign_up(page)
    deposit(page, "10")
    tab(page, "Jeu")
    choose_stake(page, 300)
    server.cli("blocks", "deactivate", str(server.blocks[300]), "--reason", "browser test")
    try:
        _jouer(page)
        expect(page.locator("#message")).to_contain_text("Plus aucun jeu à 3 €")
        assert api(page, "/plays?limit=20")["plays"] == []
        assert api(page, "/me")["balance_cents"] == 1000
    finally:
        server.load_block(300, server.blocks[300] + 100)  # a fresh block for the other tests
    bought = press_buy(page, "Jouer")
    assert bought["stake_cents"] == 300


def test_network_failure(page: Page) -> None:
    sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    page.route(_is_buy_url, lambda route: route.abort("internetdisconnected"))
    _jouer(page)
    expect(page.locator("#message")).to_contain_text("Le serveur ne répond pas")
    expect(page.get_by_role("button", name="Réessayer")).to_be_visible()
    assert api(page, "/plays?limit=20")["plays"] == []
    page.unroute(_is_buy_url)

    with page.expect_response(lambda r: _is_buy_url(r.url)) as answer:
        page.get_by_role("button", name="Réessayer").click()
    play = answer.value.json()
    expect(page.locator("#play-holder button.cover")).to_have_count(4)

    # Uncovering a grid while the network is down, then again once it is back.
    grid_read = f"**/api/v1/plays/{play['play_id']}/grids/1"
    page.route(grid_read, lambda route: route.abort("internetdisconnected"))
    page.get_by_role("button", name="Grille 1", exact=True).click()
    expect(page.locator("#message")).to_contain_text("Le serveur ne répond pas")
    expect(page.get_by_role("button", name="Grille 1", exact=True)).to_be_visible()
    page.unroute(grid_read)
    uncover(page, 1)
    expect(page.locator("#message")).to_be_hidden()

    # Logged out behind the page's back (session gone): said plainly, back to the forms.
    page.request.delete("/api/v1/sessions/current", headers=_csrf(page))
    page.get_by_role("button", name="Grille 2", exact=True).click()
    expect(page.locator("#message")).to_contain_text("session a expiré")
    expect(page.locator("#view-auth")).to_be_visible()


def test_the_last_grid_waits_for_the_network(page: Page) -> None:
    """The last grid ends the play (one write that moves the lot): while the network is down,
    it stays covered, the lot unpaid, and « Réessayer » ends it once it is back."""
    sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    play = press_buy(page, "Jouer")
    for grid in (1, 2, 3):
        uncover(page, grid)
    ending = f"**/api/v1/plays/{play['play_id']}/reveal"
    page.route(ending, lambda route: route.abort("internetdisconnected"))
    page.get_by_role("button", name="Grille 4", exact=True).click()
    expect(page.locator("#message")).to_contain_text("Le serveur ne répond pas")
    expect(page.get_by_role("button", name="Grille 4", exact=True)).to_be_visible()
    assert api(page, f"/plays/{play['play_id']}")["finished"] is False
    page.unroute(ending)
    page.get_by_role("button", name="Réessayer").click()
    expect(page.locator("#play-holder .lot")).to_be_visible()
    done = api(page, f"/plays/{play['play_id']}")
    check_finished(page, done)
    expect(page.locator("#balance")).to_have_text(format_cents(500 - 100 + done["prize_cents"]))


def _csrf(page: Page) -> dict[str, str]:
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "pharaon_csrf")
    return {"X-CSRF-Token": token}


def test_one_press_never_charges_twice(page: Page) -> None:
    sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    keys: list[str] = []

    def lose_the_answer(route: Route) -> None:
        # The request reaches the server (which charges), the answer never reaches the page.
        if route.request.method == "POST":
            keys.append(route.request.headers["idempotency-key"])
            route.fetch()
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(_is_buy_url, lose_the_answer)
    _jouer(page)
    expect(page.get_by_role("button", name="Réessayer")).to_be_visible()
    charged = api(page, "/plays?limit=20")["plays"]
    assert len(charged) == 1
    assert charged[0]["balance_before_cents"] == 500

    def pass_through(route: Route) -> None:
        if route.request.method == "POST":
            keys.append(route.request.headers["idempotency-key"])
        route.continue_()

    page.unroute(_is_buy_url)
    page.route(_is_buy_url, pass_through)
    with page.expect_response(
        lambda r: _is_buy_url(r.url) and r.request.method == "POST"
    ) as answer:
        page.get_by_role("button", name="Réessayer").click()
    assert answer.value.json()["play_id"] == charged[0]["play_id"]
    assert keys[0] == keys[1], "the retry must send the same Idempotency-Key"
    expect(page.locator("#play-ref")).to_contain_text(f"n° {charged[0]['play_id']}")
    assert len(api(page, "/plays?limit=20")["plays"]) == 1
    for grid in (1, 2, 3, 4):
        uncover(page, grid)
    finished = api(page, f"/plays/{charged[0]['play_id']}")
    assert finished["balance_after_cents"] == 400 + finished["prize_cents"]
    assert api(page, "/me")["balance_cents"] == finished["balance_after_cents"]

    # A second press is a new play with a new key; a double click is still one press.
    answered: list[Request] = []

    def record(request: Request) -> None:
        if request.method == "POST" and _is_buy_url(request.url):
            answered.append(request)

    page.on("requestfinished", record)
    sent = len(keys)
    page.get_by_role("button", name="Jouer", exact=True).dblclick()
    expect(page.locator("#play-holder button.cover")).to_have_count(4)
    # Each purchase the double click sent (one, unless it charged twice) has had its answer.
    _until(page, lambda: len(answered) == len(keys) - sent, "the purchases' answers")
    assert len(api(page, "/plays?limit=20")["plays"]) == 2
    assert len(set(keys)) == 2


def test_one_deposit_press_never_credits_twice(page: Page) -> None:
    sign_up(page)
    tab(page, "Compte")
    keys: list[str] = []

    def is_deposit(url: str) -> bool:
        return urlparse(url).path == "/api/v1/deposits"

    def lose_the_answer(route: Route) -> None:
        keys.append(route.request.headers["idempotency-key"])
        route.fetch()
        route.abort("connectionreset")

    page.route(is_deposit, lose_the_answer)
    page.fill("#deposit-amount", "7")
    page.get_by_role("button", name="Déposer", exact=True).click()
    expect(page.get_by_role("button", name="Réessayer")).to_be_visible()
    assert api(page, "/me")["balance_cents"] == 700  # it reached the server

    def pass_through(route: Route) -> None:
        keys.append(route.request.headers["idempotency-key"])
        route.continue_()

    page.unroute(is_deposit)
    page.route(is_deposit, pass_through)
    page.get_by_role("button", name="Réessayer").click()
    expect(page.locator("#message")).to_contain_text("Dépôt de 7,00 €")
    expect(page.locator("#balance")).to_have_text(format_cents(700))
    assert api(page, "/me")["balance_cents"] == 700
    assert keys[0] == keys[1]


def test_locked_out_after_five_failed_logins(page: Page) -> None:
    email = sign_up(page)
    page.get_by_role("button", name="Se déconnecter").click()
    page.fill("#login-email", email)
    page.fill("#login-password", "wrong")
    for _ in range(5):
        with page.expect_response(lambda r: r.url.endswith("/api/v1/sessions")):
            page.locator("#login-submit").click()
    expect(page.locator("#message")).to_contain_text("Adresse e-mail ou mot de passe incorrect")
    page.fill("#login-password", PASSWORD)
    page.locator("#login-submit").click()
    expect(page.locator("#message")).to_contain_text("Trop d'essais")
    expect(page.locator("#view-auth")).to_be_visible()


def test_log_in_and_sign_up_errors(page: Page) -> None:
    email = sign_up(page)
    page.get_by_role("button", name="Se déconnecter").click()
    expect(page.locator("#view-auth")).to_be_visible()
    page.fill("#login-email", email)
    page.fill("#login-password", "not the password")
    page.locator("#login-submit").click()
    expect(page.locator("#message")).to_contain_text("Adresse e-mail ou mot de passe incorrect")

    page.fill("#signup-email", email)
    page.fill("#signup-password", PASSWORD)
    page.fill("#signup-birth", "1990-05-17")
    page.get_by_role("button", name="Créer mon compte").click()
    expect(page.locator("#message")).to_contain_text("Un compte existe déjà")

    page.fill("#signup-email", new_email())
    page.fill("#signup-birth", "2015-01-01")
    page.get_by_role("button", name="Créer mon compte").click()
    expect(page.locator("#message")).to_contain_text("18 ans")
    expect(page.locator("#tabs").get_by_role("button", name="Compte")).to_be_hidden()


def test_bad_amount_is_refused_on_the_page(page: Page) -> None:
    sign_up(page)
    tab(page, "Compte")
    page.fill("#deposit-amount", "dix euros")
    page.get_by_role("button", name="Déposer", exact=True).click()
    expect(page.locator("#message")).to_contain_text("Montant invalide")
    assert api(page, "/me")["balance_cents"] == 0
