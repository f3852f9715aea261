"""``pharaon serve`` itself: migrates, (on a first start) loads one block per price, and
becomes the server (``pharaon.web.serve``) in the same process; with several workers
uvicorn's supervisor runs them on one socket, beside the server's one writer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from pharaon.pool.keys import commitment, new_key, read_key_file, write_key_file
from pharaon.service import sealing
from pharaon.settings import Settings
from pharaon.web.writer import NAME
from tests.web.live import free_port, http, wait_until
from tests.web.test_operator_api import _operator


def _serve(database_url: str, log: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [sys.executable, "-m", "pharaon", "serve", "--port", str(port)]
    args += ["--database-url", database_url, *extra]
    env = {**os.environ, "PHARAON_KEYS_DIR": str(log.parent / "keys")}  # never the project's
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=out, env=env)
    return process, f"http://127.0.0.1:{port}"


def _wait(process: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if http.get(url + "/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"no answer in {timeout} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(20)


def _create(database_url: str) -> None:
    """`pharaon db upgrade --create`: the way to a new SQLite database."""
    args = [sys.executable, "-m", "pharaon", "db", "upgrade", "--create"]
    done = subprocess.run([*args, "--database-url", database_url], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


def test_serve_without_first_start(database_url: str, tmp_path: Path) -> None:
    _create(database_url)
    log = tmp_path / "serve.log"
    process, url = _serve(database_url, log, "--no-first-start")
    try:
        _wait(process, url, log, 90)
        assert "pharaon.web.serve" in Path(f"/proc/{process.pid}/cmdline").read_text()
        assert http.get(url + "/api/v1/prizes/remaining?stake_cents=100").json() == []
        r = http.post(url + "/api/v1/players", json={"email": "x"})
        assert r.status_code == 422
    finally:
        _stop(process)
    # uvicorn shuts down cleanly, then re-raises the signal it got.
    assert process.returncode in (0, -signal.SIGTERM)


def _spawned(pid: int) -> list[int]:
    """The processes multiprocessing spawned for ``pid`` (not its tracker)."""
    tasks = Path(f"/proc/{pid}/task")
    children = [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]
    return [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


def _workers(pid: int) -> list[int]:
    """The worker processes of uvicorn's supervisor ``pid`` (not its writer)."""
    return [c for c in _spawned(pid) if Path(f"/proc/{c}/comm").read_text().strip() != NAME]


def _writers(pid: int) -> list[int]:
    """The writer processes of the server ``pid``."""
    return [c for c in _spawned(pid) if Path(f"/proc/{c}/comm").read_text().strip() == NAME]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _idle(pids: list[int]) -> None:
    """Until each of ``pids`` (a server's workers) waits in its event loop for something to
    do (its main thread in ``epoll_wait``): a new connection then goes to whichever of them the
    kernel wakes and lets accept first, not to the worker still busy with the last one, first
    back at the socket, nor to the one alone up (the other still starting)."""

    def waiting(pid: int) -> bool:
        return Path(f"/proc/{pid}/wchan").read_text() == "do_epoll_wait"

    wait_until(lambda: all(waiting(pid) for pid in pids), f"workers {pids} to be idle", 30)


def _connections_by_process(pids: list[int], port: int) -> dict[int, int]:
    """How many established TCP connections on ``port`` each of ``pids`` holds."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(fields[9])
    counts = {}
    for pid in pids:
        links = []
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(FileNotFoundError):  # closed since the folder was listed
                links.append(os.readlink(fd))
        counts[pid] = sum(1 for link in links if link[8:-1] in inodes)
    return counts


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_workers_share_the_port_and_the_connections(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "workers.log"
    process, url = _serve(database_url, log, "--no-first-start", "--workers", "2")
    clients = []
    try:
        _wait(process, url, log, 90)
        workers = _workers(process.pid)
        assert len(workers) == 2
        port = int(url.rsplit(":", 1)[1])
        for _ in range(16):  # keep-alive connections, as a browser or a load generator keeps
            client = http.client(base_url=url)
            _idle(workers)
            assert client.get("/api/v1/health").status_code == 200
            clients.append(client)
        held = _connections_by_process(workers, port)
        assert sum(held.values()) == 16
        # The workers wait on one listening socket; each connection goes to one of them, the
        # first to accept it: both get some.
        assert all(n > 0 for n in held.values()), held
    finally:
        for client in clients:
            client.close()
        _stop(process)
    assert process.returncode == 0
    assert not any(_alive(w) for w in workers)


def test_serve_runs_several_workers_on_sqlite(tmp_path: Path) -> None:
    """On SQLite too a server may have several workers: they read, and hand their writes to
    the server's one writer, a process of its own (SQLite's one writer)."""
    database_url = f"sqlite:///{tmp_path / 's.db'}"
    _create(database_url)
    log = tmp_path / "sqlite.log"
    process, url = _serve(database_url, log, "--no-first-start", "--workers", "2")
    clients = []
    try:
        _wait(process, url, log, 90)
        workers, writers = _workers(process.pid), _writers(process.pid)
        assert len(workers) == 2
        assert len(writers) == 1
        # A sign-up from each of 16 connections (both workers get some): all written, by the
        # writer, whichever worker took it.
        for n in range(16):
            client = http.client(base_url=url)
            _idle(workers)
            body = {
                "email": f"p{n}@example.fr",
                "password": "a long enough pass",
                "birth_date": "1990-01-01",
            }
            assert client.post("/api/v1/players", json=body).status_code == 201
            clients.append(client)
        held = _connections_by_process(workers, int(url.rsplit(":", 1)[1]))
        assert all(n > 0 for n in held.values()), held
        with sqlite3.connect(tmp_path / "s.db") as db:
            assert db.execute("SELECT count(*) FROM players").fetchone() == (16,)
    finally:
        for client in clients:
            client.close()
        _stop(process)
    assert process.returncode == 0
    assert not any(_alive(p) for p in workers + writers)


def test_the_server_stops_in_one_line_if_its_writer_cannot_start(tmp_path: Path) -> None:
    """``python -m pharaon.web.serve`` (what ``pharaon serve`` becomes) on a SQLite file that
    is not there: its writer cannot start, and neither does the server, in one line."""
    env = {**os.environ, "PHARAON_DATABASE_URL": f"sqlite:///{tmp_path / 's.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "pharaon.web.serve", "--workers", "2", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"pharaon.web.serve: the writer cannot start: no SQLite database {tmp_path / 's.db'}: "
        "make one with `pharaon db upgrade --create`\n"
    )
    assert not (tmp_path / "s.db").exists()


def test_serve_refuses_a_bad_url(tmp_path: Path) -> None:
    process, _ = _serve("mysql://u@h/d", tmp_path / "bad.log")
    assert process.wait(60) == 2
    assert (
        (tmp_path / "bad.log")
        .read_text()
        .endswith("pharaon: error: database must be sqlite or postgresql, got 'mysql'\n")
    )


@pytest.mark.slow
def test_first_start_loads_one_block_per_price(tmp_path: Path) -> None:
    """A SQLite path not there is refused (a mistyped path makes no new database, no keys),
    then made by `pharaon db upgrade --create`, where the first start loads the blocks."""
    log = tmp_path / "first.log"
    database = tmp_path / "first.db"
    process, _ = _serve(f"sqlite:///{database}", log)
    assert process.wait(60) == 2
    assert log.read_text().endswith(
        f"pharaon: error: no SQLite database {database}: make one with "
        "`pharaon db upgrade --create`\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.log"]
    _create(f"sqlite:///{database}")
    process, url = _serve(f"sqlite:///{database}", log)
    try:
        _wait(process, url, log, 600)
        for stake in (100, 200, 300):
            left = http.get(url + f"/api/v1/prizes/remaining?stake_cents={stake}").json()
            assert sum(p["remaining"] for p in left) == 255_505
            assert max(p["prize_cents"] for p in left) == 2_500_000 * stake // 100
    finally:
        _stop(process)
    # Its keys are kept in files only its owner reads, and its blocks commit to them.
    keys = {who: tmp_path / "keys" / f"{who}.key" for who in ("vendor", "operator")}
    for who, path in keys.items():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert f"wrote the {who} key to {path}" in log.read_text()
    with sqlite3.connect(tmp_path / "first.db") as db:
        manifests = [json.loads(m) for (m,) in db.execute("SELECT manifest_json FROM blocks")]
        approvals = db.execute("SELECT state, loaded_by, approved_by FROM blocks").fetchall()
    assert len(manifests) == 3
    # The demo's one exception: the server approves its own first blocks, as an auditor would.
    assert set(approvals) == {("open", "operator:first-start", "auditor:first-start")}
    for who, path in keys.items():
        key = read_key_file(path, who)
        assert {m[f"{who}_key_commitment"] for m in manifests} == {commitment(key)}
        assert key.hex() not in log.read_text()


def test_a_worker_starts_without_the_block_factory(tmp_path: Path) -> None:
    # numba, LLVM and pyarrow cost a worker ~100 MB of RSS; only a block upload or an export
    # (operator routes) loads them, when asked.
    _create(f"sqlite:///{tmp_path / 'lean.db'}")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pharaon.web.serve import worker_app\n"
            "worker_app()\n"
            "print(' '.join(m for m in ('numba', 'llvmlite', 'pyarrow') if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PHARAON_DATABASE_URL": f"sqlite:///{tmp_path / 'lean.db'}"},
    ).stdout.split()
    assert loaded == []


def test_serve_refuses_a_key_folder_the_operators_were_not_added_with(
    engine: Engine, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    """The operators' TOTP secrets must open with the key folder's file: a missing file or
    another key stops the start with one line (every operator log-in would fail), and the
    right folder starts."""
    _operator(engine, settings, "boss@example.org", "admin")  # its key in tmp_path / "keys"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = elsewhere / "missing.log"
    process, _ = _serve(database_url, log, "--no-first-start")  # keys: elsewhere / "keys"
    assert process.wait(60) == 2
    assert log.read_text().endswith(
        f"pharaon: error: no TOTP key file {elsewhere / 'keys' / 'totp.key'}: is "
        "PHARAON_KEYS_DIR the folder the operators were added with?\n"
    )
    assert not (elsewhere / "keys").exists()  # refused: nothing written
    sealing.load(elsewhere / "keys", create=True)  # another key
    log = elsewhere / "other.log"
    process, _ = _serve(database_url, log, "--no-first-start")
    assert process.wait(60) == 2
    assert log.read_text().endswith(
        "pharaon: error: the TOTP secret of operator boss@example.org does not open with the "
        f"key file {elsewhere / 'keys' / 'totp.key'}: is it the key file this database was "
        "sealed with?\n"
    )
    log = tmp_path / "right.log"  # keys: tmp_path / "keys", the operators' own
    process, url = _serve(database_url, log, "--no-first-start")
    try:
        _wait(process, url, log, 60)
    finally:
        _stop(process)


def test_serve_refuses_a_key_file_others_can_read(database_url: str, tmp_path: Path) -> None:
    """Any key file of the key folder (the first start's block keys, the TOTP key) open to
    others stops the start with one line, before anything is written."""
    _create(database_url)
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    vendor = keys / "vendor.key"
    write_key_file(vendor, new_key())
    vendor.chmod(0o644)
    log = tmp_path / "open.log"
    process, _ = _serve(database_url, log, "--no-first-start")
    assert process.wait(60) == 2
    assert log.read_text().endswith(
        f"pharaon: error: the key file {vendor} can be read by others (mode 0644): chmod 600 it\n"
    )
    assert [p.name for p in keys.iterdir()] == ["vendor.key"]  # nothing written


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "PHARAON_READERS",
            "four",
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        ("PHARAON_JOUER_FINISH_DAYS", "0", "Input should be greater than 0"),
    ],
)
def test_a_setting_refused_stops_the_start_with_one_line(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    env = {**os.environ, variable: value, "PHARAON_KEYS_DIR": str(tmp_path / "keys")}
    done = subprocess.run(
        [sys.executable, "-m", "pharaon", "serve", "--port", str(free_port())],
        capture_output=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == f"pharaon: error: {variable}: {said}\n"
    assert not (tmp_path / "keys").exists()  # nothing written
