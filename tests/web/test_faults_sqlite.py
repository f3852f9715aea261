"""SQLite's disk failing under a real server: the database on a small tmpfs that fills up, and
on one made read-only. Purchases are refused with 503 and the error shape, nothing is torn,
and once space (or writing) returns the same keys buy and the audit is clean."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from sqlalchemy import Engine

from pharaon.service import loading
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from tests.conftest import make_block
from tests.web.live import LiveServer
from tests.web.test_live import SLOW, Buyer, _check_books, _sign_up

pytestmark = pytest.mark.faults

UNAVAILABLE = {"error": "unavailable", "detail": "the database is unavailable; try again shortly"}


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the fault tests are required)")
    pytest.skip(reason)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture
def disk() -> Iterator[Path]:
    """A 16 MiB tmpfs mounted for this test, unmounted after."""
    folder = Path(tempfile.mkdtemp(prefix="pharaon-disk-"))
    try:
        _mount("-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(folder))
    except (OSError, subprocess.CalledProcessError) as exc:
        folder.rmdir()
        message = getattr(exc, "stderr", "") or str(exc)
        _skip_or_fail(f"cannot mount a tmpfs: {message.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def served(disk: Path, tmp_path: Path) -> Iterator[tuple[Engine, LiveServer]]:
    url = f"sqlite:///{disk / 'pharaon.db'}"
    engine = make_engine(url)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        loading.load_block(
            session=session,
            block=make_block(100, size=200),
            allow_test=True,
            actor="t",
            now=utcnow(),
        )
    live = LiveServer(url, tmp_path / "server.log")
    live.start()
    yield engine, live
    live.stop()
    engine.dispose()


def _write_until_full(out: BinaryIO, size: int) -> None:
    while True:
        out.write(b"\0" * size)


def _fill(folder: Path) -> Path:
    """Write zeros into ``folder`` until the filesystem is full."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (65536, 512):  # then the last pages too
            with pytest.raises(OSError, match="No space left") as full:
                _write_until_full(out, size)
            assert full.value.errno == errno.ENOSPC
    return filler


def _post(base: str, buyer: Buyer, key: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {buyer.token}", "Idempotency-Key": key}
    body = {"stake_cents": 100, "mode": "auto"}
    return httpx.post(f"{base}/api/v1/plays", json=body, headers=headers, timeout=SLOW)


def test_a_full_disk_refuses_purchases_with_503(
    disk: Path, served: tuple[Engine, LiveServer]
) -> None:
    engine, live = served
    base = live.url
    buyers = [Buyer(f"disk{i}@example.org") for i in range(3)]
    for buyer in buyers:
        buyer.token = _sign_up(base, buyer.email)
    refused: list[tuple[Buyer, str]] = []
    filler = _fill(disk)
    # Pages already in the write-ahead log may take a few purchases: go on until one is
    # refused, then a few more.
    for n in range(120):
        buyer = buyers[n % len(buyers)]
        key = f"{buyer.email}-{n}"
        r = _post(base, buyer, key)
        if r.status_code == 201:
            buyer.answers[key] = r.json()
            continue
        assert r.status_code == 503, r.text
        assert r.json() == UNAVAILABLE
        refused.append((buyer, key))
        if len(refused) >= 5:
            break
    assert refused, "no purchase was refused on a full disk"
    filler.unlink()
    for buyer, key in refused:  # space is back: the same keys buy, once
        r = _post(base, buyer, key)
        assert r.status_code == 201, r.text
        buyer.answers[key] = r.json()
    _check_books(engine, base, buyers)


def test_a_read_only_disk_refuses_purchases_with_503(
    disk: Path, served: tuple[Engine, LiveServer]
) -> None:
    engine, live = served
    base = live.url
    buyer = Buyer("ro@example.org")
    buyer.token = _sign_up(base, buyer.email)
    r = _post(base, buyer, "before")
    assert r.status_code == 201, r.text
    buyer.answers["before"] = r.json()
    # Linux refuses to make a filesystem read-only while a file on it is open for writing
    # (EBUSY), as the server's database is: the server is stopped around the remount.
    live.stop()
    engine.dispose()
    _mount("-o", "remount,ro", str(disk))
    try:
        live.start()
        for n in range(3):
            r = _post(base, buyer, f"ro-{n}")
            assert r.status_code == 503, r.text
            assert r.json() == UNAVAILABLE
        live.stop()
    finally:
        _mount("-o", "remount,rw", str(disk))
    live.start()
    for n in range(3):
        r = _post(base, buyer, f"ro-{n}")
        assert r.status_code == 201, r.text
        buyer.answers[f"ro-{n}"] = r.json()
    _check_books(engine, base, [buyer])
