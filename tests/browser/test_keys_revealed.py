"""Keys revealed at close in the console, in Chromium: a closed block offers an admin « Publier
les clés »; the key files are read in the browser; a wrong key or a file that holds none is
refused in words, and the right ones are published and shown on the block's row (and anyone
reads them at the public route). A screenshot goes to artifacts/screenshots/console-keys.png."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from pharaon.pool.blockfile import write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.keys import write_key_file
from tests.browser.conftest import BLOCK_SIZE, Server
from tests.browser.test_console import log_in

pytestmark = pytest.mark.browser

ADMIN = "keys@example.org"
VENDOR = bytes(range(3, 35))
OPERATOR = bytes(range(103, 135))


@pytest.fixture(scope="module")
def admin(server: Server) -> str:
    if ADMIN not in server.totp_secrets:
        server.add_operator(ADMIN, "admin")
    return server.totp_secrets[ADMIN]


def _closed_block(server: Server, tmp_path: Path) -> int:
    """A block made from VENDOR and OPERATOR, loaded (never approved, so never on sale) and
    deactivated; its id."""
    path = tmp_path / "keys-block.parquet"
    block = generate_block(
        300,
        design=test_design(BLOCK_SIZE),
        block_number=91,
        vendor_key=VENDOR,
        operator_key=OPERATOR,
    )
    write_block(block, path)
    found = re.search(r"loaded block (\d+)", server.cli("blocks", "load", str(path)))
    assert found is not None
    block_id = int(found.group(1))
    server.cli("blocks", "deactivate", str(block_id), "--reason", "closed for the keys' test")
    return block_id


def test_an_admin_publishes_a_closed_blocks_keys(
    page: Page, server: Server, admin: str, tmp_path: Path, screenshots: Path
) -> None:
    block_id = _closed_block(server, tmp_path)
    keys = {"vendor": VENDOR, "operator": OPERATOR, "other": bytes(range(50, 82))}
    files = {name: tmp_path / f"{name}.key" for name in keys}
    for name, path in files.items():
        write_key_file(path, keys[name])
    not_a_key = tmp_path / "notes.txt"
    not_a_key.write_text("not a key\n")

    page.goto("/operator/")
    log_in(page, ADMIN, admin)
    row = page.locator(f'#blocks-rows tr[data-block-id="{block_id}"]')
    expect(row.locator(".state")).to_contain_text("désactivé")
    open_row = page.locator(f'#blocks-rows tr[data-block-id="{server.blocks[100]}"]')
    expect(open_row.locator("button.publish-keys")).to_have_count(0)  # on sale: nothing to publish
    row.locator("button.publish-keys").click()
    expect(page.locator("#keys-form")).to_be_visible()
    expect(page.locator("#keys-title")).to_have_text(f"Publier les clés du bloc n° {block_id}")

    page.set_input_files("#keys-vendor", str(not_a_key))
    page.set_input_files("#keys-operator", str(files["operator"]))
    page.locator("#keys-submit").click()
    expect(page.locator("#message")).to_have_text(
        "Le fichier de la clé du vendeur ne contient pas une clé hexadécimale (16 à 64 octets)."
    )

    page.set_input_files("#keys-vendor", str(files["other"]))
    with page.expect_response(lambda r: r.url.endswith(f"/blocks/{block_id}/keys")) as answer:
        page.locator("#keys-submit").click()
    assert answer.value.status == 422
    expect(page.locator("#message")).to_contain_text(
        f"Refusé : ces clés ne sont pas celles du bloc n° {block_id}"
    )
    public = f"{server.url}/api/v1/audit/blocks/{block_id}/keys"
    assert httpx.get(public, timeout=10).status_code == 404

    page.set_input_files("#keys-vendor", str(files["vendor"]))
    with page.expect_response(lambda r: r.url.endswith(f"/blocks/{block_id}/keys")) as answer:
        page.locator("#keys-submit").click()
    assert answer.value.status == 200
    expect(page.locator("#message")).to_have_text(
        f"Clés publiées pour le(s) bloc(s) n° {block_id}."
    )
    expect(page.locator("#keys-form")).to_be_hidden()
    shown = row.locator("details.keys")
    expect(shown.locator("summary")).to_have_text("Clés publiées")
    expect(row.locator("button.publish-keys")).to_have_count(0)
    shown.locator("summary").click()
    expect(shown.locator("dd code").first).to_have_text(VENDOR.hex())
    expect(shown.locator("dd code").last).to_have_text(OPERATOR.hex())
    page.screenshot(path=str(screenshots / "console-keys.png"), full_page=True)
    published = httpx.get(public, timeout=10).json()
    assert (published["vendor_key"], published["operator_key"]) == (VENDOR.hex(), OPERATOR.hex())

    page.locator("#lang").click()
    expect(shown.locator("summary")).to_have_text("Keys published")
