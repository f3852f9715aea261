"""Fixtures for the browser tests: the real server in a subprocess, Debian's Chromium.

The server is ``pharaon serve`` on a SQLite file of its own, with one small test block per
price loaded through the operator's commands (``pharaon blocks load``). Playwright never
downloads a browser here: it drives ``/usr/bin/chromium``. When that is missing the tests
FAIL if ``CI=true`` and are skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from pharaon.pool.blockfile import Block, write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service import approvals
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_engine, make_sessionmaker

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHARAON = Path(sys.executable).with_name("pharaon")
ROOT = Path(__file__).resolve().parents[2]
# Where the tests' screenshots go: artifacts/ (ignored by git), or docs/screenshots/ with
# `make screenshots`, which refreshes the pictures the docs show.
SCREENSHOTS = ROOT / os.environ.get("PHARAON_SCREENSHOTS_DIR", "artifacts/screenshots")
BLOCK_SIZE = 200  # units per test block: enough for every test, made in milliseconds
PRICES = (100, 200, 300)
START_SECONDS = 60
OPERATOR_PASSWORD = "a long operator password"
# The commands that name their operator with --as (required once an operator exists).
_ACTING = {("blocks", "load"), ("blocks", "deactivate")}


@dataclass
class Server:
    """The running server and the operator's commands on its database."""

    url: str
    database_url: str
    env: dict[str, str]
    blocks_dir: Path
    log: Path
    blocks: dict[int, int] = field(default_factory=dict)  # price cents → its open block's id
    made: dict[int, Block] = field(default_factory=dict)  # block id → as made here, in sale order
    acting: str | None = None  # the admin named by --as once operators exist
    totp_secrets: dict[str, str] = field(default_factory=dict)  # operator e-mail → secret

    def cli(self, *args: str) -> str:
        """Run ``pharaon ARGS --database-url URL`` (with ``--as`` the first admin where the
        command takes it, once there is one); its stdout (fails the test on error)."""
        acting = ["--as", self.acting] if self.acting and args[:2] in _ACTING else []
        done = subprocess.run(
            [str(PHARAON), *args, *acting, "--database-url", self.database_url],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"pharaon {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def load_block(self, price_cents: int, number: int, *, approve: bool = True) -> int:
        """Make a test block at ``price_cents`` and load it, approved by ``auditor:test``
        through the service unless not ``approve``; its block id."""
        path = self.blocks_dir / f"block-{price_cents}-{number}.parquet"
        block = generate_block(price_cents, design=test_design(BLOCK_SIZE), block_number=number)
        write_block(block, path)
        out = self.cli("blocks", "load", str(path))
        found = re.search(r"loaded block (\d+)", out)
        if found is None:
            pytest.fail(f"pharaon blocks load said: {out!r}")
        block_id = int(found.group(1))
        self.made[block_id] = block
        if not approve:
            return block_id
        engine = make_engine(self.database_url)
        try:
            with make_sessionmaker(engine).begin() as session:
                approvals.verify_and_approve(
                    session=session, block_id=block_id, actor="auditor:test", now=utcnow()
                )
        finally:
            engine.dispose()
        self.blocks[price_cents] = block_id
        return block_id

    def add_operator(self, email: str, role: str) -> str:
        """Add an operator (password OPERATOR_PASSWORD) with ``pharaon operators add``, as an
        operator would; returns the TOTP secret it shows. The command asks the password with
        getpass: in a session of its own it has no terminal and reads it from stdin."""
        acting = ["--as", self.acting] if self.acting else []
        command = [str(PHARAON), "operators", "add", email, "--role", role, *acting]
        done = subprocess.run(
            [*command, "--database-url", self.database_url],
            input=f"{OPERATOR_PASSWORD}\n{OPERATOR_PASSWORD}\n",
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            start_new_session=True,
        )
        found = re.search(r"secret: (\S+)", done.stdout)
        if done.returncode != 0 or found is None:
            pytest.fail(f"pharaon operators add failed: {done.stderr.strip() or done.stdout}")
        self.totp_secrets[email] = found.group(1)
        if role == "admin" and self.acting is None:
            self.acting = email
        return found.group(1)

    def api(self, path: str) -> Any:
        """GET a public API route."""
        return httpx.get(f"{self.url}/api/v1{path}", timeout=10).json()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"pharaon serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail(f"pharaon serve did not answer /api/v1/health in {START_SECONDS} s")


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``pharaon serve`` on a fresh SQLite database with one test block per price.

    Package-scoped, like the browser: each process of the suite that runs browser tests (an
    xdist worker) has its own, stopped once its last browser test is done."""
    work = tmp_path_factory.mktemp("browser-server")
    env = {
        **os.environ,
        "PHARAON_ALLOW_TEST_BLOCKS": "1",
        "PHARAON_KEYS_DIR": str(work / "keys"),  # the server's TOTP sealing key, not var/keys
    }
    env.pop("PHARAON_DATABASE_URL", None)
    port = _free_port()
    server = Server(
        url=f"http://127.0.0.1:{port}",
        database_url=f"sqlite:///{work / 'pharaon.db'}",
        env=env,
        blocks_dir=work,
        log=work / "server.log",
    )
    server.cli("db", "upgrade", "--create")
    (work / "keys").mkdir(mode=0o700)
    # The key that signs the receipts, as an operator makes it (the first start would).
    subprocess.run(
        [str(PHARAON), "keys", "new", "--out", str(work / "keys" / "receipts.key")],
        env=env,
        capture_output=True,
        check=True,
    )
    with server.log.open("wb") as log:
        process = subprocess.Popen(
            [
                str(PHARAON),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--database-url",
                server.database_url,
                "--no-first-start",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # The blocks load while the server starts, each in a process of its own (SQLite's busy
        # timeout takes their writes in turn): the start waits for the slowest, not the sum.
        with ThreadPoolExecutor(len(PRICES)) as loading:
            for done in [loading.submit(server.load_block, price, 1) for price in PRICES]:
                done.result()
        _wait_healthy(server.url, process, server.log)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    if not CHROMIUM.exists():
        reason = f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; CI=true: the browser tests are required")
        pytest.skip(reason)
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    """A fresh browser profile (no cookies, no storage) at 1280 × 800 on the page."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=server.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/")
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="package")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
