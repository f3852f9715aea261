"""The block commands start without the server's layers: `pharaon verify` is waited for."""

from __future__ import annotations

import subprocess
import sys

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
