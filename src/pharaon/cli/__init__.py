"""The command line: thin commands that parse arguments and call the library."""

from __future__ import annotations

import gc

from pharaon.cli.app import app  # its commands' modules are loaded when they are asked for

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    finally:
        # The collection CPython runs at exit walks every object numba made (~0.12 s of a
        # block command); frozen, they are left to the OS, which frees them at once.
        gc.freeze()
