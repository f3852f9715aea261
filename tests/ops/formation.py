"""A pg_auto_failover formation of its own: a monitor and two PostgreSQL nodes (a primary and
its synchronous standby) in a temporary folder, made and run with ``pg_autoctl`` from Debian's
packages, with the monitor's timings of ``deploy/pg_auto_failover/monitor.sql``."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg

from tests.ops.proxy import DEPLOY
from tests.web.cluster import skip_or_fail
from tests.web.live import free_port

SETTLE_SECONDS = 180.0  # at most, for a node to reach its state (a busy shared machine)


class Formation:
    """``pg_autoctl`` processes in ``folder``: the monitor, then nodes ``node1``, ``node2``."""

    def __init__(self, bin_dir: Path, folder: Path) -> None:
        self.bin = bin_dir
        self.folder = folder
        self.monitor_port = free_port()
        self.ports: dict[str, int] = {}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._user = "postgres" if os.geteuid() == 0 else None  # PostgreSQL refuses root

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ.get('PATH', '')}",
            "XDG_CONFIG_HOME": str(self.folder / "config"),
            "XDG_DATA_HOME": str(self.folder / "share"),
        }

    def _popen(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """``pg_autoctl args`` in a session of its own (as postgres, when root), logged."""
        with (self.folder / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                ["pg_autoctl", *args],
                env=self._env(),
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=self.folder,
                user=self._user,
                group=self._user,
            )

    def _pg_autoctl(self, *args: str) -> str:
        return subprocess.run(
            ["pg_autoctl", *args],
            env=self._env(),
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.folder,
            user=self._user,
            group=self._user,
        ).stdout

    @property
    def monitor_uri(self) -> str:
        return f"postgres://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover?sslmode=disable"

    def create_monitor(self) -> None:
        data = str(self.folder / "monitor")
        self._pg_autoctl(
            "create", "monitor", "--pgdata", data, "--pgport", str(self.monitor_port),
            "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl",
        )  # fmt: skip
        self.processes["monitor"] = self._popen("monitor", "run", "--pgdata", data)
        self._wait(lambda: self._answers(self.monitor_port), "the monitor to answer")
        timings = (DEPLOY / "pg_auto_failover" / "monitor.sql").read_text()
        url = f"postgresql://postgres@127.0.0.1:{self.monitor_port}/pg_auto_failover"
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in _statements(timings):
                conn.execute(statement)
            conn.execute("SELECT pg_reload_conf()")

    def add_node(self, name: str) -> None:
        """A node, made and run by its keeper; the first is the primary, the next its
        synchronous standby (made by ``pg_basebackup`` from the primary)."""
        self.ports[name] = port = free_port()
        data = str(self.folder / name)
        self.processes[name] = self._popen(
            name, "create", "postgres", "--pgdata", data, "--pgport", str(port),
            "--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--name", name,
            "--auth", "trust", "--no-ssl", "--dbname", "pharaon",
            "--monitor", self.monitor_uri, "--run",
        )  # fmt: skip

    def configure(self, name: str) -> None:
        """The keeper settings of ``deploy/pg_auto_failover/keeper.settings``, reloaded."""
        data = str(self.folder / name)
        for line in (DEPLOY / "pg_auto_failover" / "keeper.settings").read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                setting, value = line.split()
                self._pg_autoctl("config", "set", "--pgdata", data, setting, value)
        self._pg_autoctl("reload", "--pgdata", data)

    def states(self) -> dict[str, tuple[str, str]]:
        """Each node's reported and assigned state, as the monitor has them."""
        monitor = str(self.folder / "monitor")
        shown = self._pg_autoctl("show", "state", "--pgdata", monitor, "--json")
        return {
            n["nodename"]: (n["current_group_state"], n["assigned_group_state"])
            for n in json.loads(shown)
        }

    def wait_for_states(self, wanted: dict[str, str], nudge: str | None = None) -> None:
        """Until each named node reports (and is assigned) the state wanted. ``nudge``: a
        node asked for a CHECKPOINT meanwhile (a standby's base backup waits for one)."""

        def reached() -> bool:
            if nudge is not None:
                with contextlib.suppress(psycopg.Error):
                    self.execute(nudge, "CHECKPOINT")
            with contextlib.suppress(subprocess.CalledProcessError, ValueError, KeyError):
                now = self.states()
                return all(now.get(n) == (s, s) for n, s in wanted.items())
            return False

        self._wait(reached, f"the states {wanted}")

    def execute(self, name: str, sql: str) -> None:
        url = f"postgresql://postgres@127.0.0.1:{self.ports[name]}/postgres"
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
            conn.execute(sql)

    def url(self, database: str = "pharaon") -> str:
        """The servers' URL: both nodes, the one that takes writes chosen by libpq."""
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.ports.values())
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"

    def kill(self, name: str) -> None:
        """The machine lost: its keeper and its PostgreSQL SIGKILLed, no goodbye."""
        postmaster = self._postmaster(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.processes[name].pid, signal.SIGKILL)
        if postmaster is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(postmaster, signal.SIGKILL)
        self.processes[name].wait(10)

    def _postmaster(self, name: str) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.folder / name / "postmaster.pid").read_text().split()[0])
        return None

    def close(self) -> None:
        """Every process this formation started, stopped; nodes first, the monitor last."""
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
            postmaster = self._postmaster(name)
            if postmaster is not None:  # left running by a keeper killed mid-way
                with contextlib.suppress(ProcessLookupError):
                    os.kill(postmaster, signal.SIGKILL)

    def _answers(self, port: int) -> bool:
        try:
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            with psycopg.connect(url, connect_timeout=2):
                return True
        except psycopg.Error:
            return False

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None and name in self.ports | {"monitor": 0}:
                    log = (self.folder / f"{name}.log").read_text()[-3000:]
                    raise RuntimeError(f"pg_autoctl {name} exited: {log}")
            if done():
                return
            time.sleep(0.2)
        logs = "\n".join(
            f"--- {n}\n" + (self.folder / f"{n}.log").read_text()[-1500:] for n in self.processes
        )
        raise RuntimeError(f"waited {SETTLE_SECONDS:.0f} s for {what}:\n{logs}")


def _statements(sql: str) -> list[str]:
    """The file's statements, its comments left out."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def throwaway_formation() -> Iterator[Formation]:
    """A monitor and two nodes, node1 the primary and node2 its synchronous standby;
    stopped and removed after."""
    if shutil.which("pg_autoctl") is None:
        skip_or_fail("pg_autoctl not installed (Debian's pg-auto-failover-cli package)")
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        skip_or_fail("PostgreSQL's binaries not found under /usr/lib/postgresql/*/bin")
    folder = Path(tempfile.mkdtemp(prefix="pharaon-paf-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    formation = Formation(Path(found[-1]).parent, folder)
    try:
        formation.create_monitor()
        formation.add_node("node1")
        formation.wait_for_states({"node1": "single"})
        formation.add_node("node2")
        formation.wait_for_states({"node1": "primary", "node2": "secondary"}, nudge="node1")
        for node in ("node1", "node2"):
            formation.configure(node)
        yield formation
    finally:
        formation.close()
        shutil.rmtree(folder, ignore_errors=True)
