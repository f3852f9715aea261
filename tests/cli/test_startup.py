"""The block commands start without the server's layers: `pharaon verify` is waited for."""

from __future__ import annotations

import importlib
import subprocess
import sys

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
    # Without the freeze, CPython's last collection walks numba's objects: ~0.12 s per command.
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


def test_every_registered_command_is_in_the_table() -> None:
    # A command registered by a module but missing from COMMANDS would never be found.
    for module in set(COMMANDS.values()):
        importlib.import_module(f"pharaon.cli.{module}")
    assert set(app.commands) == set(COMMANDS)
    assert list(app.list_commands(click.Context(app))) == list(COMMANDS)
