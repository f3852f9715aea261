"""The command line: thin commands that parse arguments and call the library."""

from __future__ import annotations

import gc

from pharaon.cli.app import app  # its commands' modules are loaded when they are asked for

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    finally:
        # Frozen, the objects numba made are left to the OS at exit, which frees them at once,
        # instead of being walked by CPython's last collection.
        gc.freeze()
