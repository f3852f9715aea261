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
