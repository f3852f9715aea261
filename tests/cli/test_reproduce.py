"""`pharaon reproduce` as an auditor runs it (issue 28, « keys revealed at close »): a test block
made from two key files is loaded, approved and sold out, the operator reveals its keys through
the API of a real server, and the command, a process of its own, regenerates the block and
finds its published units SHA-256 and Merkle root; with another key or another design it says
what differs, in one line, and exits 1. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyotp
import pytest
from sqlalchemy import Engine

from pharaon.game.modes import Mode
from pharaon.pool.design import Design, test_design
from pharaon.pool.keys import read_key_file, write_key_file
from pharaon.service.orders import Order
from pharaon.service.plays import PlayView
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from tests.service.helpers import buy, funded_player
from tests.web.live import LiveServer, http
from tests.web.test_operator_api import PASSWORD, _operator
from tests.web.test_revealed_keys import load_with_keys

SIZE = 16


def _reproduce(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pharaon", "reproduce", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _reproduce_each(*runs: Sequence[object]) -> list[subprocess.CompletedProcess[str]]:
    """``pharaon reproduce`` with each of ``runs``' arguments, the commands run side by side
    (they only read); their results, in order."""
    with ThreadPoolExecutor(len(runs)) as pool:
        return list(pool.map(lambda args: _reproduce(*args), runs))


def _design_file(path: Path, design: Design, name: str) -> Path:
    """``design`` written as a design file under another ``name`` (so another digest)."""
    lines = [f'[design]\nname = "{name}"\nblock_size = {design.block_size}\ntest = true\n']
    for amount in sorted({c.amount_cents for c in design.compositions}, reverse=True):
        parts = [
            f'{{ lines = "{c.lines}", bonus = "{c.bonus}", count = {c.count} }}'
            for c in design.compositions
            if c.amount_cents == amount
        ]
        lines.append(f"[[lot]]\namount_cents = {amount}\ncomposition = [{', '.join(parts)}]\n")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def key_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The vendor's, the operator's and another key file (known keys, mode 0600)."""
    files = tmp_path / "vendor.key", tmp_path / "operator.key", tmp_path / "other.key"
    for path, first in zip(files, (1, 101, 201), strict=True):
        write_key_file(path, bytes(range(first, first + 32)))
    return files


def test_a_sold_out_block_is_reproduced_from_its_revealed_keys(
    tmp_path: Path,
    database_url: str,
    engine: Engine,
    settings: Settings,
    key_files: tuple[Path, Path, Path],
) -> None:
    vendor_file, operator_file, other_file = key_files
    vendor = read_key_file(vendor_file, "vendor")
    operator = read_key_file(operator_file, "operator")
    block_id = load_with_keys(engine, vendor, operator, size=SIZE)
    sessions = make_sessionmaker(engine)
    buyer = funded_player(sessions, "buyer", 100 * SIZE)
    sold = buy(sessions, [Order(buyer, 100, Mode.AUTO, f"k{n}") for n in range(SIZE)])
    assert all(isinstance(p, PlayView) and p.block_id == block_id for p in sold)
    secret = _operator(engine, settings, "boss@example.org", "admin")
    keys = ["--vendor-key-file", vendor_file, "--operator-key-file", operator_file]
    server = LiveServer(
        database_url, tmp_path / "server.log", env={"PHARAON_KEYS_DIR": str(settings.keys_dir)}
    )
    server.start()
    try:
        api = server.url + "/api/v1"
        [block] = http.get(api + "/blocks").json()
        assert (block["block_id"], block["state"]) == (block_id, "sold_out")
        not_yet = _reproduce("--server", server.url, "--block", block_id, *keys)
        assert not_yet.returncode == 0, not_yet.stderr  # the key files alone reproduce it

        session = http.post(
            api + "/operator/sessions",
            json={
                "email": "boss@example.org",
                "password": PASSWORD,
                "totp_code": pyotp.TOTP(secret).now(),
            },
        )
        assert session.status_code == 200, session.text
        admin = {"Authorization": f"Bearer {session.json()['token']}"}
        r = http.post(
            f"{api}/operator/blocks/{block_id}/keys",
            json={"vendor_key": vendor.hex(), "operator_key": operator.hex()},
            headers=admin,
        )
        assert r.status_code == 200, r.text
        published = http.get(f"{api}/audit/blocks/{block_id}/keys").json()
        assert published["vendor_key"] == vendor_file.read_text().strip()

        wrong_key = ["--vendor-key-file", other_file, "--operator-key-file", operator_file]
        design = _design_file(tmp_path / "other.toml", test_design(SIZE), "another-16")
        done, wrong, other_design, missing = _reproduce_each(
            ["--server", server.url, "--block", block_id, *keys],
            ["--server", server.url, "--block", block_id, *wrong_key],
            ["--server", server.url, "--block", block_id, *keys, "--design", design],
            ["--server", server.url, "--block", 99, *keys],
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        [line] = done.stdout.splitlines()
        assert line.startswith(f"block {block_id} reproduced: {SIZE} units")
        assert block["units_sha256"] in line
        assert block["merkle_root"] in line

        assert wrong.returncode == 1
        assert wrong.stdout == ""
        [line] = wrong.stderr.splitlines()
        assert f"block {block_id} not reproduced: the vendor key is not the block's" in line

        assert other_design.returncode == 1
        [line] = other_design.stderr.splitlines()
        assert "the design another-16" in line
        assert published["design_digest"] in line

        assert missing.returncode == 2
        assert missing.stderr.splitlines() == ["pharaon: error: the server publishes no block 99"]
    finally:
        server.stop()


def test_another_design_of_the_same_size_does_not_make_the_block(
    tmp_path: Path, key_files: tuple[Path, Path, Path]
) -> None:
    """From a manifest, whose design digest is known: a design file of the block's own
    compositions under another name is refused before anything is made; without the digest
    (a server whose keys are not out), the regenerated hashes differ."""
    from pharaon.pool.generate import generate_block

    vendor_file, operator_file, _ = key_files
    keys = ["--vendor-key-file", vendor_file, "--operator-key-file", operator_file]
    made = generate_block(
        200,
        block_number=3,
        design=test_design(SIZE),
        vendor_key=read_key_file(vendor_file, "vendor"),
        operator_key=read_key_file(operator_file, "operator"),
    )
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(made.manifest.as_json()), encoding="utf-8")
    design = _design_file(tmp_path / "other.toml", test_design(SIZE), "another-16")
    data = made.manifest.as_json()
    data["design_digest"] = ""  # a manifest that does not say its design digest
    undigested = tmp_path / "undigested.json"
    undigested.write_text(json.dumps(data), encoding="utf-8")
    done, refused, told_by_units = _reproduce_each(
        ["--manifest", manifest, *keys],
        ["--manifest", manifest, *keys, "--design", design],
        ["--manifest", undigested, *keys, "--design", design],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("block E1/200/3 reproduced: ")
    assert refused.returncode == 1
    assert len(refused.stderr.splitlines()) == 1
    assert "is not the block's pharaon-regulation-v1-test-16" in refused.stderr

    # Nothing to compare the design with: the regenerated units tell.
    assert told_by_units.returncode == 1
    assert len(told_by_units.stderr.splitlines()) == 1
    assert "not reproduced: the regenerated block differs: units SHA-256" in told_by_units.stderr


def test_bad_input_ends_with_one_line(tmp_path: Path, key_files: tuple[Path, Path, Path]) -> None:
    vendor_file, operator_file, _ = key_files
    keys = ["--vendor-key-file", vendor_file, "--operator-key-file", operator_file]
    loose = tmp_path / "loose.key"
    loose.write_text(bytes(range(32)).hex())
    loose.chmod(0o644)
    not_json = tmp_path / "manifest.json"
    not_json.write_text("{")
    runs = (
        keys,
        ["--manifest", not_json, "--server", "http://127.0.0.1:1", *keys],
        ["--manifest", not_json, *keys],
        ["--manifest", tmp_path / "absent.json", *keys],
        ["--server", "ftp://example.org", "--block", 1, *keys],
        ["--server", "http://127.0.0.1:1", "--block", 1, *keys],
        ["--manifest", not_json, "--vendor-key-file", loose, "--operator-key-file", operator_file],
    )
    for args, done in zip(runs, _reproduce_each(*runs), strict=True):
        assert done.returncode == 2, args
        assert done.stderr.startswith("pharaon: error: "), args
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert bytes(range(32)).hex() not in done.stderr
