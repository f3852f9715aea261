"""The command line: thin commands that parse arguments and call the library."""

from __future__ import annotations

import gc
import sys

from pydantic import ValidationError

from pharaon.cli.app import app  # its commands' modules are loaded when they are asked for

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        # A PHARAON_* variable the settings refuse: one line that names it, no traceback.
        first = exc.errors()[0]
        name = "PHARAON_" + "_".join(str(p) for p in first["loc"]).upper()
        print(f"pharaon: error: {name}: {first['msg']}", file=sys.stderr)
        sys.exit(2)
    finally:
        # Frozen, the objects numba made are left to the OS at exit, which frees them at once,
        # instead of being walked by CPython's last collection.
        gc.freeze()
