"""SQLite's disk failing under a real server: the database on a small tmpfs that fills up, and
on an ext4 filesystem that a disk error makes read-only under the running server. Purchases
are refused with 503 and the error shape, nothing is torn, and once space (or writing)
returns the same keys buy and the audit is clean."""

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

from pharaon.store.engine import make_engine
from pharaon.store.migrate import upgrade
from tests.conftest import load_for_sale, make_block
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


def _database(url: str) -> Engine:
    """A migrated database at ``url`` with a test block of 200 units at 1 €."""
    engine = make_engine(url)
    upgrade(engine)
    load_for_sale(engine, make_block(100, size=200))
    return engine


@pytest.fixture
def served(disk: Path, tmp_path: Path) -> Iterator[tuple[Engine, LiveServer]]:
    url = f"sqlite:///{disk / 'pharaon.db'}"
    engine = _database(url)
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


class Ext4Disk:
    """An ext4 filesystem in an image file, mounted on a loop device with errors=remount-ro."""

    def __init__(self, image: Path, folder: Path) -> None:
        self.image = image
        self.folder = folder

    def mount(self) -> None:
        _mount("-o", "loop,errors=remount-ro", str(self.image), str(self.folder))

    def fail(self) -> None:
        """Make the filesystem read-only under its open files, as ext4 does on a disk error."""
        device = Path(self._device()).name
        Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("pharaon test\n")
        options = self._options().split(",")
        assert "ro" in options or "emergency_ro" in options, options

    def mend(self) -> None:
        """What an administrator does: unmount, repair, mount again (writable)."""
        subprocess.run(["umount", str(self.folder)], check=True, capture_output=True)
        fsck = subprocess.run(
            ["e2fsck", "-fy", str(self.image)], check=False, capture_output=True, text=True
        )
        assert fsck.returncode in (0, 1), fsck.stdout + fsck.stderr  # 1: errors corrected
        self.mount()

    def _device(self) -> str:
        return self._line().split()[0]

    def _options(self) -> str:
        return self._line().split()[3]

    def _line(self) -> str:
        for line in Path("/proc/mounts").read_text().splitlines():
            if line.split()[1] == str(self.folder):
                return line
        raise AssertionError(f"{self.folder} is not mounted")


@pytest.fixture
def ext4_disk(tmp_path: Path) -> Iterator[Ext4Disk]:
    """A 64 MiB ext4 filesystem on a loop device, for this test."""
    image = tmp_path / "disk.img"
    folder = tmp_path / "disk"
    folder.mkdir()
    with image.open("wb") as out:
        out.truncate(64 * 1024 * 1024)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    disk = Ext4Disk(image, folder)
    try:
        disk.mount()
    except (OSError, subprocess.CalledProcessError) as exc:
        message = getattr(exc, "stderr", "") or str(exc)
        _skip_or_fail(f"cannot mount an ext4 image on a loop device: {message.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def test_a_disk_made_read_only_mid_run_refuses_purchases_with_503(
    ext4_disk: Ext4Disk, tmp_path: Path
) -> None:
    url = f"sqlite:///{ext4_disk.folder / 'pharaon.db'}"
    engine = _database(url)
    live = LiveServer(url, tmp_path / "server.log")
    live.start()
    try:
        base = live.url
        buyer = Buyer("ro@example.org")
        buyer.token = _sign_up(base, buyer.email)
        for n in range(3):
            r = _post(base, buyer, f"before-{n}")
            assert r.status_code == 201, r.text
            buyer.answers[f"before-{n}"] = r.json()
        # A disk error: ext4 turns the filesystem read-only under the server's open database.
        engine.dispose()
        ext4_disk.fail()
        for n in range(3):
            r = _post(base, buyer, f"ro-{n}")
            assert r.status_code == 503, r.text
            assert r.json() == UNAVAILABLE
        # The filesystem stays read-only until repaired: the server is stopped to unmount it.
        live.stop()
        ext4_disk.mend()
        with engine.connect() as connection:  # nothing torn
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        engine.dispose()
        live.start()
        for n in range(3):  # the refused keys buy now, once
            r = _post(base, buyer, f"ro-{n}")
            assert r.status_code == 201, r.text
            buyer.answers[f"ro-{n}"] = r.json()
        _check_books(engine, base, [buyer])
    finally:
        live.stop()
        engine.dispose()
