"""The click group every command module registers on, and the way commands fail."""

from __future__ import annotations

import sys
from typing import NoReturn

import click


class Group(click.Group):
    """A group that lists its commands in the order they were registered, not sorted."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 (click's signature)
        return list(self.commands)


app = Group(
    name="pharaon",
    help="« Pharaon »: generate and prove blocks of game units, sell and play them.",
    no_args_is_help=True,
)

USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """End the command with one line on stderr saying what is wrong."""
    sys.stderr.write(f"pharaon: error: {message}\n")
    raise click.exceptions.Exit(code)
