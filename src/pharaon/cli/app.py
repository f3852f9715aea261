"""The Typer application every command module registers on, and the way commands fail."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

app = typer.Typer(
    name="pharaon",
    help="« Pharaon »: generate and prove blocks of game units, sell and play them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """End the command with one line on stderr saying what is wrong."""
    sys.stderr.write(f"pharaon: error: {message}\n")
    raise typer.Exit(code)


@app.callback()
def _root() -> None:
    """« Pharaon »: generate and prove blocks of game units, sell and play them."""
