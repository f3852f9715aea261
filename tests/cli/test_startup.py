"""The block commands start without the server's layers: `pharaon verify` is waited for."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import click

from pharaon.cli.app import COMMANDS, app

SERVER_LAYERS = ("sqlalchemy", "fastapi", "alembic", "pharaon.service", "pharaon.store")


def test_the_command_line_loads_without_the_server_layers() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pharaon.cli\n"
            f"print(' '.join(m for m in {SERVER_LAYERS!r} if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert loaded == []


def test_a_command_leaves_its_objects_to_the_os_at_exit() -> None:
    # Without the freeze, CPython's last collection walks every object numba made.
    frozen = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, sys\n"
            "from pharaon.cli import main\n"
            "before = gc.get_freeze_count()\n"
            "sys.argv = ['pharaon', '--help']\n"
            "try:\n"
            "    main()\n"
            "except SystemExit as exc:\n"
            "    print(before, gc.get_freeze_count() > 0, exc.code)\n",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-3:]
    assert frozen == ["0", "True", "0"]


def _loaded_for(command: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a process loads to find ``pharaon COMMAND``, stderr not a tty."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, click\n"
            "from pharaon.cli import app\n"
            f"assert app.get_command(click.Context(app), {command!r}) is not None\n"
            f"print(' '.join(m for m in {modules!r} if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout.split()


def test_a_command_loads_its_own_module_only() -> None:
    others = ("pharaon.cli.ops", "pharaon.cli.operators", "pharaon.cli.keys", "rich")
    assert _loaded_for("generate", others) == []
    assert _loaded_for("serve", ("pharaon.cli.pool", "pharaon.cli.game")) == []
    assert _loaded_for("serve", ("pharaon.cli.ops",)) == ["pharaon.cli.ops"]


def test_a_command_s_module_is_imported_without_collections_and_frozen() -> None:
    # numba's import makes objects by the hundred thousand, which live as long as the process.
    seen = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, click\n"
            "from pharaon.cli import app\n"
            "def collections():\n"
            "    return sum(generation['collections'] for generation in gc.get_stats())\n"
            "before, frozen = collections(), gc.get_freeze_count()\n"
            "assert app.get_command(click.Context(app), 'generate') is not None\n"
            "print(collections() - before, gc.get_freeze_count() > frozen, gc.isenabled())",
        ],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout.split()
    assert seen == ["0", "True", "True"]


def test_every_registered_command_is_in_the_table() -> None:
    # A command registered by a module but missing from COMMANDS would never be found.
    for module in set(COMMANDS.values()):
        importlib.import_module(f"pharaon.cli.{module}")
    assert set(app.commands) == set(COMMANDS)
    assert list(app.list_commands(click.Context(app))) == list(COMMANDS)


def _pharaon(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pharaon ARGS`` in a fresh process (no command module loaded beforehand), with ``env``
    added to the environment."""
    return subprocess.run(
        [sys.executable, "-c", "from pharaon.cli import main\nmain()", *args],
        check=False,  # the exit code is what the tests look at
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        timeout=120,  # a start that is not stopped would serve for ever
    )


def test_help_lists_every_command_in_order_with_its_short_help() -> None:
    result = _pharaon("--help")
    assert result.returncode == 0, result.stderr
    section = result.stdout.split("Commands:\n", 1)[1].splitlines()
    rows = [line.split(maxsplit=1) for line in section if line.startswith("  ") and line.strip()]
    assert [row[0] for row in rows] == list(COMMANDS)
    assert all(len(row) == 2 and row[1].strip() for row in rows), rows


def test_an_unknown_command_gets_clicks_error() -> None:
    result = _pharaon("genrate")
    assert result.returncode == 2
    assert "No such command 'genrate'" in result.stderr


def test_a_wrong_password_hashing_stops_the_start_with_one_line(tmp_path: Path) -> None:
    result = _pharaon(
        "serve",
        env={
            "PHARAON_PASSWORD_HASHING": "fast",
            "PHARAON_DATABASE_URL": f"sqlite:///{tmp_path / 'pharaon.db'}",
            "PHARAON_KEYS_DIR": str(tmp_path / "keys"),
        },
    )
    assert result.returncode == 2
    assert result.stderr.startswith("pharaon: error: PHARAON_PASSWORD_HASHING: ")
    assert "'production'" in result.stderr
    assert "'fast-insecure-for-tests'" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "pharaon.db").exists()


def test_progress_on_a_pipe_is_plain_lines_without_rich() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pharaon.cli.progress import progress_display\n"
            "with progress_display() as progress:\n"
            "    progress('layout', 0, 2)\n"
            "    progress('layout', 2, 2)\n"
            "print('rich' in sys.modules)",
        ],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert result.stdout.split() == ["False"]
    assert re.fullmatch(r"layout: done in \d+\.\d\d s\n", result.stderr), result.stderr
