"""The backup-and-restore drill, as an operator runs it with pgBackRest
(``deploy/pgbackrest.conf`` as delivered, only its folders, port and socket replaced by the
test's; PostgreSQL started with the settings that file's comment asks for).

On a throwaway cluster (``tests/web/cluster.py``): ``stanza-create``, ``check``, a full
backup; then a database ``pharaon`` is made, migrated and given a block, units are sold and a
checkpoint of the audit chain is published; that moment is the target. After it, a new player
buys, the others buy more, another checkpoint is published, then every play is deleted (the
audit says so). The cluster is stopped and restored to the target: the plays sold before it
are all there and none of those after, the balances are those of the target, and ``pharaon
audit`` is clean through the checkpoints published before it (and names the one published
after it as beyond the chain). The seconds taken are printed."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.orm import Session

from pharaon.game.modes import Mode
from pharaon.service import checkpoints, wallet
from pharaon.service.clock import utcnow
from pharaon.service.orders import Order
from pharaon.service.plays import PlayView
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from tests.conftest import load_for_sale, make_block
from tests.ops.proxy import DEPLOY
from tests.service.helpers import buy, funded_player
from tests.web.cluster import Cluster, skip_or_fail

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

CONF = DEPLOY / "pgbackrest.conf"
STANZA = "pharaon"
WAIT = 300.0  # seconds, at most, for WAL to be archived or a restored cluster to recover
BLOCK_SIZE = 60
DEPOSIT = 5_000
BEFORE = 8  # plays per player sold before the target
AFTER = 5  # plays per player sold after it, and the new player's

Sessions = Callable[[], Session]


class Backrest:
    """pgBackRest on the cluster, run as its owner with the test's copy of the configuration."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.config = cluster.folder / "pgbackrest.conf"
        self.repo = cluster.folder / "backrest" / "repo"
        self.folders = {
            "repo1-path": self.repo,
            "spool-path": cluster.folder / "backrest" / "spool",
            "log-path": cluster.folder / "backrest" / "log",
            "lock-path": cluster.folder / "backrest" / "lock",
            "pg1-path": cluster.data,
            "pg1-socket-path": cluster.folder,
        }

    def __call__(self, *args: str) -> str:
        """``pgbackrest ARGS`` on the stanza; its standard output (the run fails the test with
        pgBackRest's own words when it exits non-zero)."""
        command = ["pgbackrest", f"--config={self.config}", f"--stanza={STANZA}", *args]
        try:
            return self.cluster.run(*command)
        except subprocess.CalledProcessError as exc:
            pytest.fail(f"{' '.join(command)} exited {exc.returncode}:\n{exc.stdout}{exc.stderr}")

    def configure(self) -> None:
        """Write the delivered file with the test's folders, port and socket; make the folders
        (the cluster's owner's); and add the PostgreSQL settings of the file's comment to the
        cluster's postgresql.conf, the archive command reading this copy (from the next
        start)."""
        delivered = CONF.read_text(encoding="utf-8")
        text = delivered
        values = {name: str(path) for name, path in self.folders.items()}
        values["pg1-port"] = str(self.cluster.port)
        for name, value in values.items():
            text, found = re.subn(rf"(?m)^{re.escape(name)}=.*$", f"{name}={value}", text)
            assert found == 1, f"{CONF} sets {name} {found} times, not once"
        self.config.write_text(text, encoding="utf-8")
        shutil.chown(self.config, self.cluster.folder.owner(), self.cluster.folder.group())
        for name, path in self.folders.items():
            if not name.startswith("pg1-"):
                self.cluster.run("mkdir", "-p", "-m", "750", str(path))
        lines = postgres_settings(delivered)
        with (self.cluster.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            for line in lines:
                conf.write(line.replace("pgbackrest ", f"pgbackrest --config={self.config} ", 1))
                conf.write("\n")

    def backups(self) -> list[dict[str, Any]]:
        """The stanza's backups as ``pgbackrest info --output=json`` lists them."""
        (stanza,) = json.loads(self("info", "--output=json"))
        backups: list[dict[str, Any]] = stanza["backup"]
        return backups


def postgres_settings(conf: str) -> list[str]:
    """The ``name = value`` lines of the configuration's comment: what PostgreSQL needs."""
    lines = re.findall(r"(?m)^#\s+([a-z_]+ = .+)$", conf)
    names = {line.split(" = ")[0]: line for line in lines}
    for name in ("archive_mode", "archive_command", "wal_level", "max_wal_senders"):
        assert name in names, f"{CONF}'s comment does not give PostgreSQL's {name}"
    expected = "archive_command = 'pgbackrest --stanza=pharaon archive-push %p'"
    assert names["archive_command"] == expected, names["archive_command"]
    return lines


@pytest.fixture
def backrest(request: pytest.FixtureRequest) -> Iterator[Backrest]:
    """pgBackRest configured on a throwaway cluster restarted with archiving on; skipped
    without ``pgbackrest`` (failed when ``CI=true``). After: the cluster stopped and no
    pgBackRest process of its left running (the folder is removed by ``cluster``)."""
    if shutil.which("pgbackrest") is None:
        skip_or_fail("pgbackrest not installed (Debian: apt-get install pgbackrest)")
    cluster: Cluster = request.getfixturevalue("cluster")
    backrest = Backrest(cluster)
    backrest.configure()
    cluster.stop()
    cluster.start()
    yield backrest
    with contextlib.suppress(subprocess.CalledProcessError):  # a restore that did not start
        cluster.stop()
    _wait_for_exit(str(backrest.config))


def _wait_for_exit(marker: str, timeout: float = 60.0) -> None:
    """Until no process has ``marker`` in its command line (the asynchronous archive-push
    that pgBackRest leaves behind ends by itself once its queue is pushed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if marker.encode() in cmdline.read_bytes():
                    running.append(cmdline.parent.name)
            except OSError:
                continue
        if not running:
            return
        time.sleep(0.2)
    pytest.fail(f"pgBackRest processes {running} still running {timeout:.0f} s after the stop")


def _pharaon_database(cluster: Cluster) -> str:
    """A database ``pharaon`` on the cluster, migrated, with one test block; its URL."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE pharaon")
    url = cluster.url("pharaon")
    engine = make_engine(url)
    try:
        upgrade(engine)
        load_for_sale(engine, make_block(100, size=BLOCK_SIZE))
    finally:
        engine.dispose()
    return url


def _sell(sessions: Sessions, players: list[int], count: int, tag: str) -> set[int]:
    """``count`` units at 1 € to each player, one batch per round; the plays' ids."""
    plays: set[int] = set()
    for n in range(count):
        orders = [Order(p, 100, Mode.AUTO, f"{tag}-{p}-{n}") for p in players]
        sold = buy(sessions, orders)
        assert all(isinstance(s, PlayView) for s in sold), sold
        plays.update(s.play_id for s in sold if isinstance(s, PlayView))
    return plays


def _balances(sessions: Sessions, players: list[int]) -> dict[int, int]:
    with sessions() as session:
        return {p: wallet.balance(session=session, player_id=p) for p in players}


def _publish_checkpoint(sessions: Sessions, folder: Path, name: str) -> Path:
    """Take a checkpoint of the audit chain, and keep every checkpoint so far in a file, as
    someone outside keeps GET /api/v1/audit/checkpoints; the file."""
    with sessions() as session, session.begin():
        checkpoints.take(session, reason="daily", now=utcnow())
    with sessions() as session:
        kept = checkpoints.list_checkpoints(connection=session.connection())
    path = folder / name
    path.write_text(json.dumps([{"seq": c.seq, "sha256": c.sha256} for c in kept]))
    return path


def _database_now(cluster: Cluster) -> str:
    """The database's clock, with its zone, as pgBackRest's ``--target`` takes it."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        row = conn.execute("SELECT now()::text").fetchone()
    assert row is not None
    return str(row[0])


def _archive_all(cluster: Cluster) -> None:
    """Close the current WAL segment and wait until it is archived: whatever was committed
    is in the repository."""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
        assert row is not None
        segment = str(row[0])
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            archiver = conn.execute(
                "SELECT last_archived_wal, last_failed_wal FROM pg_stat_archiver"
            ).fetchone()
            assert archiver is not None
            if archiver[0] is not None and archiver[0] >= segment:
                return
            time.sleep(0.2)
    pytest.fail(f"WAL segment {segment} not archived in {WAIT:.0f} s (archiver: {archiver})")


def _wait_promoted(cluster: Cluster) -> None:
    """Until the restored cluster has replayed to the target and takes writes."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(cluster.url(), connect_timeout=5) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and not row[0]:
                return
        except psycopg.OperationalError:
            pass
        time.sleep(0.2)
    pytest.fail(f"still in recovery after {WAIT:.0f} s:\n{cluster.log.read_text()[-3000:]}")


def _database_size(cluster: Cluster) -> int:
    with psycopg.connect(cluster.url()) as conn:
        row = conn.execute("SELECT pg_database_size('pharaon')").fetchone()
    assert row is not None
    return int(row[0])


def _audit(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pharaon audit`` as an operator runs it, on ``url``."""
    return subprocess.run(
        [sys.executable, "-m", "pharaon", "audit", "--database-url", url, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def _full_backups(backrest: Backrest) -> list[dict[str, Any]]:
    """The full backups in the repository."""
    return [b for b in backrest.backups() if b["type"] == "full"]


def _timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


@dataclass
class Sales:
    """What the drill sold: the plays kept (before the target) and lost (after it), the
    balances at the target, and the checkpoints published up to it and after it."""

    players: list[int]
    kept: set[int]
    lost: set[int]
    balances: dict[int, int]
    target: str
    published_before: Path
    published_after: Path
    size: int  # bytes of the database pharaon, before the damage


def _back_up(backrest: Backrest) -> tuple[float, dict[str, Any]]:
    """The stanza created and checked, then a full backup: its seconds, and what ``info``
    says of it."""
    backrest("stanza-create")
    backrest("check")
    seconds = _timed(lambda: backrest("backup", "--type=full"))
    (full,) = _full_backups(backrest)
    # pgBackRest picks the backup by its stop time, in whole seconds, strictly before the
    # target: the drill's target, a second or so later, must not share the stop's second.
    while time.time() < full["timestamp"]["stop"] + 1:
        time.sleep(0.05)
    return seconds, full


def _sell_then_damage(cluster: Cluster, url: str, folder: Path) -> Sales:
    """Sales, a checkpoint, the target; then a new player, more sales and a checkpoint, and
    every play deleted (the audit fails); all of it archived."""
    engine = make_engine(url)
    try:
        sessions = make_sessionmaker(engine)
        players = [funded_player(sessions, f"p{n}", DEPOSIT) for n in range(2)]
        kept = _sell(sessions, players, BEFORE, "before")
        balances = _balances(sessions, players)
        published_before = _publish_checkpoint(sessions, folder, "before.json")
        target = _database_now(cluster)
        late = funded_player(sessions, "late", DEPOSIT)
        lost = _sell(sessions, [*players, late], AFTER, "after")
        published_after = _publish_checkpoint(sessions, folder, "after.json")
        size = _database_size(cluster)
    finally:
        engine.dispose()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM plays")  # an operator's mistake
    damaged = _audit(url)
    assert damaged.returncode == 1, damaged.stdout + damaged.stderr
    assert "FAIL  one play per sold unit" in damaged.stdout, damaged.stdout
    _archive_all(cluster)
    return Sales(players, kept, lost, balances, target, published_before, published_after, size)


def _restore(backrest: Backrest, target: str) -> tuple[float, float]:
    """The cluster stopped, restored to ``target`` and started: the seconds of the restore,
    and of the recovery until it takes writes."""
    cluster = backrest.cluster
    cluster.stop()
    restore_seconds = _timed(
        lambda: backrest(
            "restore", "--delta", "--type=time", f"--target={target}", "--target-action=promote"
        )
    )
    started = time.monotonic()
    try:
        cluster.start()
    except subprocess.CalledProcessError:
        pytest.fail(f"the restored cluster did not start:\n{cluster.log.read_text()[-3000:]}")
    _wait_promoted(cluster)
    recovery_seconds = time.monotonic() - started
    # Replayed from the repository's WAL, and stopped at the target (PostgreSQL's words).
    log = cluster.log.read_text(errors="replace")
    assert re.search(r'restored log file "\w+" from archive', log), log[-3000:]
    assert "recovery stopping before commit of transaction" in log, log[-3000:]
    return restore_seconds, recovery_seconds


def _check_restored(url: str, sales: Sales) -> None:
    """Every play sold before the target, none after; its players only, at their balances."""
    with psycopg.connect(url) as conn:
        plays = {int(r[0]) for r in conn.execute("SELECT id FROM plays")}
        emails = {str(r[0]) for r in conn.execute("SELECT email FROM players")}
    kept, lost = sales.kept, sales.lost
    assert plays == kept, f"missing {sorted(kept - plays)}, after the target {plays & lost}"
    assert emails == {"p0@example.org", "p1@example.org"}
    engine = make_engine(url)
    try:
        assert _balances(make_sessionmaker(engine), sales.players) == sales.balances
    finally:
        engine.dispose()


def test_restored_to_a_moment_between_sales(
    backrest: Backrest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backup_seconds, full = _back_up(backrest)
    url = _pharaon_database(backrest.cluster)
    sales = _sell_then_damage(backrest.cluster, url, tmp_path)
    assert (len(sales.kept), len(sales.lost)) == (2 * BEFORE, 3 * AFTER)

    restore_seconds, recovery_seconds = _restore(backrest, sales.target)

    _check_restored(url, sales)
    with ThreadPoolExecutor(2) as pool:  # two audits side by side: they only read
        audit, beyond = pool.map(
            lambda published: _audit(url, "--checkpoints", str(published)),
            (sales.published_before, sales.published_after),
        )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "FAIL" not in audit.stdout
    assert "ok    one play per sold unit: all match" in audit.stdout, audit.stdout
    # A checkpoint published after the target is not in the restored chain, and it says so.
    assert beyond.returncode == 1, beyond.stdout + beyond.stderr
    assert "is beyond the chain" in beyond.stdout, beyond.stdout

    mib = 2**20
    with capsys.disabled():
        print(
            f"\nrestore drill: full backup {backup_seconds:.1f} s (cluster "
            f"{full['info']['size'] / mib:.1f} MiB, "
            f"{full['info']['repository']['size'] / mib:.1f} MiB in the repository); "
            f"database pharaon {sales.size / mib:.1f} MiB; restore {restore_seconds:.1f} s, "
            f"then WAL replayed to the target and promoted in {recovery_seconds:.1f} s; "
            f"{len(sales.kept)} plays kept, {len(sales.lost)} after the target gone"
        )
