"""The command line: thin commands that parse arguments and call the library."""

from __future__ import annotations

import gc

from pharaon.cli import game as _game  # noqa: F401  (registers its commands)
from pharaon.cli import keys as _keys  # noqa: F401  (registers its commands)
from pharaon.cli import operators as _operators  # noqa: F401  (registers its commands)
from pharaon.cli import ops as _ops  # noqa: F401  (registers its commands)
from pharaon.cli import pool as _pool  # noqa: F401  (registers its commands)
from pharaon.cli import proofs as _proofs  # noqa: F401  (registers its commands)
from pharaon.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    finally:
        # The collection CPython runs at exit walks every object numba made (~0.12 s of a
        # block command); frozen, they are left to the OS, which frees them at once.
        gc.freeze()
