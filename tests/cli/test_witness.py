"""`pharaon witness` as its runner would run it: a process of its own beside a real server,
cosigning its checkpoints (kept in its state, published by the server, served at its own
address), and refusing, with one line and exit 1, once the server's history is rewritten. On
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner
from sqlalchemy import Engine

from pharaon.cli import app
from pharaon.pool import notes
from pharaon.pool.keys import new_key, write_key_file
from pharaon.service import transparency
from tests.conftest import BlockLoader
from tests.web.live import LiveServer, free_port
from tests.web.test_transparency import forge_history

NAME = "regulator.example/witness"


def _witness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pharaon", "witness", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_witness_cosigns_then_refuses_a_rewritten_history(
    tmp_path: Path, database_url: str, engine: Engine, load: BlockLoader
) -> None:
    keys = tmp_path / "keys"
    log = transparency.load(keys, "pharaon/audit-log", create=True)
    assert log is not None
    key = tmp_path / "witness.key"
    write_key_file(key, new_key())
    result = CliRunner().invoke(
        app, ["witness", "--url", "x", "--key", str(key), "--name", NAME, "--vkey"]
    )
    assert result.exit_code == 0, result.output
    vkey = result.stdout.strip()
    assert notes.parse_vkey(vkey).kind == notes.COSIGNATURE_V1
    load(100)
    server = LiveServer(
        database_url,
        tmp_path / "server.log",
        env={"PHARAON_KEYS_DIR": str(keys), "PHARAON_WITNESS_KEYS": vkey},
    )
    state = tmp_path / "witness.json"
    args = ["--url", server.url, "--log-key", log.verifier.vkey, "--key", str(key)]
    args += ["--name", NAME, "--state", str(state)]
    server.start()
    watcher: subprocess.Popen[bytes] | None = None
    try:
        done = _witness(*args, "--once")
        assert done.returncode == 0, done.stderr
        assert "cosigned the checkpoint of" in done.stderr
        kept = json.loads(state.read_text())
        published = notes.parse(httpx.get(server.url + "/api/v1/audit/checkpoint").text)
        assert notes.verify(published, notes.parse_vkey(vkey)).name == NAME
        assert notes.parse_checkpoint(published.text).size == kept["size"]

        load(200)  # the log grows: cosigned from the consistency proof, served at --listen
        port = free_port()
        listen = ["--interval", "1", "--listen", f"127.0.0.1:{port}"]
        watcher = subprocess.Popen(
            [sys.executable, "-m", "pharaon", "witness", *args, *listen],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline, served = time.monotonic() + 30, None
        while time.monotonic() < deadline:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/checkpoint", timeout=1)
                if (
                    r.status_code == 200
                    and notes.parse_checkpoint(notes.parse(r.text).text).size > kept["size"]
                ):
                    served = r.text
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert served is not None, "the witness never served the new checkpoint"
        assert httpx.get(f"http://127.0.0.1:{port}/key").text.strip() == vkey
        watcher.terminate()
        watcher.wait(10)
        before = state.read_text()
        assert json.loads(before)["note"] == served

        forge_history(engine, load)
        refused = _witness(*args, "--once")
        assert refused.returncode == 1
        lines = refused.stderr.splitlines()
        assert len(lines) == 1, refused.stderr
        assert lines[0].startswith("pharaon witness: REFUSED: the log's checkpoint of")
        assert lines[0].endswith("the log's history was rewritten")
        assert state.read_text() == before  # nothing cosigned
        now = notes.parse(httpx.get(server.url + "/api/v1/audit/checkpoint").text)
        assert not now.signed_by(notes.parse_vkey(vkey))
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait(10)
        server.stop()


def test_bad_arguments_end_with_one_line(tmp_path: Path) -> None:
    key = tmp_path / "witness.key"
    write_key_file(key, new_key())
    runner = CliRunner()
    base = ["witness", "--key", str(key), "--name", NAME, "--state", str(tmp_path / "s")]
    for args, says in (
        (["--url", "http://x", "--log-key", "nope"], "--log-key: a verifier key is"),
        (["--url", "ftp://x", "--log-key", "a+b+c"], "--url must start with"),
        (["--url", "http://x"], "give --log-key and --state"),
    ):
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == 2, result.output
        assert says in result.stderr
        assert result.stderr.count("\n") == 1
    result = runner.invoke(
        app, ["witness", "--url", "http://x", "--key", str(tmp_path / "none"), "--name", NAME]
    )
    assert result.exit_code == 2
    assert "does not exist" in result.stderr
