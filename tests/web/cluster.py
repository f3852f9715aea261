"""A PostgreSQL cluster of its own, made with ``initdb`` in a temporary folder and started on a
free port, for the tests that stop and restart their database while the shared server stays
up (fixture ``cluster`` in ``tests/web/conftest.py``)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.live import free_port


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the fault tests are required)")
    pytest.skip(reason)


class Cluster:
    """A PostgreSQL cluster of its own in a temporary folder, on a free port."""

    def __init__(self, bin_dir: Path, folder: Path) -> None:
        self.bin = bin_dir
        self.data = folder / "data"
        self.log = folder / "postgres.log"
        self.folder = folder
        self.port = free_port()
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.settings: dict[str, str] = {}  # more postgres -c name=value, from the next start
        self.env: dict[str, str] = {}  # more environment, for the server and the tools

    def run(self, *args: str) -> str:
        """A command as the cluster's owner (postgres, when the tests run as root); its
        standard output."""
        return subprocess.run(
            [*self._as, *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **self.env},
        ).stdout

    def _run(self, *args: str) -> None:
        self.run(*args)

    def init(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """Stopped as a crash stops it: no checkpoint, every process gone at once."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def restart_as_standby(self) -> None:
        """Stop, then start again in recovery, as a standby with no primary to follow: it
        answers, but takes no writes (what a primary turned standby does)."""
        self.stop()
        self._run("touch", str(self.data / "standby.signal"))
        self.start()

    def promote(self) -> None:
        """Out of recovery: it takes writes again."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "promote")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


def throwaway_cluster() -> Iterator[Cluster]:
    """A started cluster, stopped and removed after."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        skip_or_fail("initdb not found under /usr/lib/postgresql/*/bin")
    folder = Path(tempfile.mkdtemp(prefix="pharaon-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    cluster = Cluster(Path(found[-1]).parent, folder)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running any more
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


def throwaway_standby(primary: Cluster, name: str) -> Iterator[Cluster]:
    """A streaming standby of ``primary``, started, named ``name`` (its ``application_name``,
    what ``synchronous_standby_names`` lists); stopped and removed after."""
    folder = Path(tempfile.mkdtemp(prefix="pharaon-pg-standby-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    standby = Cluster(primary.bin, folder)
    try:
        standby.run(
            str(primary.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
            "-U", "postgres", "-D", str(standby.data), "-X", "stream", "-R",
        )  # fmt: skip
        with (standby.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(
                f"primary_conninfo = 'host=127.0.0.1 port={primary.port} user=postgres "
                f"application_name={name}'\n"
            )
        standby.start()
        yield standby
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running any more
            standby.stop()
        shutil.rmtree(folder, ignore_errors=True)
