"""The command line: thin commands that parse arguments and call the library."""

from __future__ import annotations

import gc
import sys

from pydantic import ValidationError

from pharaon.cli.app import app  # its commands' modules are loaded when they are asked for
from pharaon.settings import refused

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        # A PHARAON_* variable the settings refuse: one line that names it, no traceback.
        print(f"pharaon: error: {refused(exc)}", file=sys.stderr)
        sys.exit(2)
    finally:
        # Frozen, the objects numba made are left to the OS at exit, which frees them at once,
        # instead of being walked by CPython's last collection.
        gc.freeze()
