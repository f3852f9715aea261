"""« Vérifier » in the history: the page checks a play's proof itself (WebCrypto) against the
root the Infos tab publishes, and refuses a tampered proof; ``pharaon check-proof`` too."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from pharaon.service import receipts
from tests.browser.conftest import PHARAON, Server
from tests.browser.helpers import api, deposit, press_buy, sign_up, tab, uncover, without_motion

pytestmark = pytest.mark.browser


def _play_one(page: Page) -> dict[str, object]:
    without_motion(page)  # the proofs of a play, not how it was uncovered
    sign_up(page)
    deposit(page, "5")
    tab(page, "Jeu")
    bought = press_buy(page, "Jouer")
    for grid in (1, 2, 3, 4):
        uncover(page, grid)
    expect(page.locator("#balance-note")).to_have_text("")  # the play is finished on the page
    play: dict[str, object] = api(page, f"/plays/{bought['play_id']}")
    assert play["finished"] is True
    return play


def _verify(page: Page, play_id: object) -> None:
    tab(page, "Historique")
    page.get_by_role("button", name=f"Vérifier la partie n° {play_id}", exact=True).click()


def _flip(hex_text: str) -> str:
    return ("1" if hex_text[0] == "0" else "0") + hex_text[1:]


def _check_proof(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PHARAON), "check-proof", str(path)], capture_output=True, text=True, check=False
    )


def test_verify_says_the_play_is_in_the_block_the_infos_tab_shows(
    page: Page, tmp_path: Path
) -> None:
    play = _play_one(page)
    _verify(page, play["play_id"])
    verdict = page.locator("#proof-result")
    expect(verdict).to_have_attribute("data-verdict", "good")
    expect(verdict).to_contain_text(f"Partie n° {play['play_id']} vérifiée")
    expect(verdict).to_contain_text("appartient bien au bloc")
    text = verdict.inner_text()
    root = next(w for w in text.replace("(", " ").split() if len(w) == 64)
    tab(page, "Infos")
    row = page.locator("#blocks-table article.block").filter(has_text=root)
    expect(row).to_have_count(1)
    (block,) = [b for b in api(page, "/blocks") if b["block_id"] == play["block_id"]]
    assert block["merkle_root"] == root
    expect(row).to_contain_text(block["units_sha256"])
    assert row.get_attribute("data-block-id") == str(play["block_id"])
    # The same proof, offline.
    proof = api(page, f"/plays/{play['play_id']}/proof")
    good = tmp_path / "proof.json"
    good.write_text(json.dumps(proof))
    done = _check_proof(good)
    assert done.returncode == 0, done.stderr
    assert root in done.stdout
    proof["path"][0]["hash"] = _flip(proof["path"][0]["hash"])
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(proof))
    done = _check_proof(bad)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "bad proof" in done.stderr


def test_a_tampered_proof_is_refused_by_the_page(page: Page) -> None:
    play = _play_one(page)

    def tamper(route: Route) -> None:
        proof = route.fetch().json()
        proof["path"][-1]["hash"] = _flip(proof["path"][-1]["hash"])
        route.fulfill(json=proof)

    page.route("**/api/v1/plays/*/proof", tamper)
    _verify(page, play["play_id"])
    verdict = page.locator("#proof-result")
    expect(verdict).to_have_attribute("data-verdict", "bad")
    expect(verdict).to_contain_text("preuve REFUSÉE")
    expect(verdict).to_contain_text("ne mène pas à la racine Merkle publiée")

    # A proof about another unit (its lot changed) is refused too.
    def other_lot(route: Route) -> None:
        proof = route.fetch().json()
        proof["lot_cents"] += 50
        route.fulfill(json=proof)

    page.unroute("**/api/v1/plays/*/proof")
    page.route("**/api/v1/plays/*/proof", other_lot)
    _verify(page, play["play_id"])
    expect(verdict).to_have_attribute("data-verdict", "bad")
    expect(verdict).to_contain_text("ne porte pas sur le jeu de cette partie")


def test_verify_holds_the_proof_against_the_kept_receipt(page: Page) -> None:
    play = _play_one(page)
    kept = page.evaluate(f"localStorage.getItem('pharaon.receipt.{play['play_id']}')")
    assert kept is not None  # the purchase's receipt, kept by the page
    receipt = json.loads(kept)
    assert f"play_id {play['play_id']}\n" in receipt["text"]
    _verify(page, play["play_id"])
    verdict = page.locator("#proof-result")
    expect(verdict).to_have_attribute("data-verdict", "good")
    expect(verdict).to_contain_text("Le reçu de vente signé, gardé par ce navigateur le")
    # A receipt changed in the browser no longer holds: its signature is not the key's.
    receipt["text"] = receipt["text"].replace(f"serial {play['serial']}\n", "serial 999999\n")
    page.evaluate(
        "([k, v]) => localStorage.setItem(k, v)",
        [f"pharaon.receipt.{play['play_id']}", json.dumps(receipt)],
    )
    _verify(page, play["play_id"])
    expect(verdict).to_have_attribute("data-verdict", "bad")
    expect(verdict).to_contain_text("n'est pas signé par la clé publiée des reçus")


def _changing(field: str, value: object) -> Callable[[Route], None]:
    """A route handler answering the true proof with its ``field`` made ``value``."""

    def tamper(route: Route) -> None:
        proof = route.fetch().json()
        proof[field] = value
        route.fulfill(json=proof)

    return tamper


def test_verify_refuses_a_proof_that_is_not_the_sale_its_receipt_signed(page: Page) -> None:
    """A true proof (its path still leads to the published root) whose block's emission,
    number or price is not what the kept receipt signed: refused, naming the field."""
    play = _play_one(page)
    true = api(page, f"/plays/{play['play_id']}/proof")
    verdict = page.locator("#proof-result")
    for field, value, words in [
        ("emission", "E9", "l'émission"),
        ("block_number", true["block_number"] + 1, "le numéro du bloc"),
        ("price_cents", true["price_cents"] + 100, "le prix (en centimes)"),
    ]:
        page.route("**/api/v1/plays/*/proof", _changing(field, value))
        _verify(page, play["play_id"])
        expect(verdict).to_have_attribute("data-verdict", "bad")
        expect(verdict).to_contain_text("preuve REFUSÉE")
        expect(verdict).to_contain_text(
            f"ne disent pas la même vente : {words} ({field}) vaut {true[field]} dans le reçu, "
            f"{value} dans la preuve."
        )
        page.unroute("**/api/v1/plays/*/proof")
    _verify(page, play["play_id"])  # the true proof again
    expect(verdict).to_have_attribute("data-verdict", "good")


def test_verify_still_reads_a_v1_receipt(page: Page, server: Server) -> None:
    """A receipt kept before the block's emission, number and price were signed: held against
    the proof on what it signed (its block, here)."""
    play = _play_one(page)
    key = f"pharaon.receipt.{play['play_id']}"
    kept = json.loads(page.evaluate(f"localStorage.getItem('{key}')"))
    said = dict(line.split(" ", 1) for line in kept["text"].splitlines()[1:])
    signer = receipts.load(server.blocks_dir / "keys")
    assert signer is not None
    verdict = page.locator("#proof-result")
    for block, good in ((said["block_id"], True), ("999999", False)):
        text = (
            f"pharaon/receipt/v1\nplay {said['play_id']}\nblock {block}\n"
            f"serial {said['serial']}\ntime {said['time']}\nroot {said['merkle_root']}\n"
        )
        signature = base64.b64encode(signer._key.sign(text.encode())).decode()
        receipt = json.dumps({"text": text, "signature": signature})
        page.evaluate("([k, v]) => localStorage.setItem(k, v)", [key, receipt])
        _verify(page, play["play_id"])
        if good:
            expect(verdict).to_have_attribute("data-verdict", "good")
            expect(verdict).to_contain_text("Le reçu de vente signé, gardé par ce navigateur le")
        else:
            expect(verdict).to_have_attribute("data-verdict", "bad")
            expect(verdict).to_contain_text(
                f"le bloc (block_id) vaut 999999 dans le reçu, {play['block_id']} dans la preuve."
            )
