"""The click group every command module registers on, and the way commands fail."""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, NoReturn

import click


class Group(click.Group):
    """A group that lists its commands in the order they were registered, not sorted."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 (click's signature)
        return list(self.commands)


# Each command (or group) of ``pharaon``, in the order --help lists them, and the module of
# pharaon.cli that registers it: a command's module is imported when it is asked for, so that
# `pharaon generate` loads neither the server's layers nor the other commands'.
COMMANDS: Final = {
    "evaluate": "game",
    "keys": "keys",
    "operators": "operators",
    "export-sales": "operators",
    "trace": "operators",
    "banned": "banned",
    "db": "ops",
    "blocks": "ops",
    "audit": "ops",
    "serve": "ops",
    "generate": "pool",
    "verify": "pool",
    "export": "pool",
    "report": "pool",
    "check-proof": "proofs",
    "reproduce": "reproduce",
    "witness": "witness",
}


class Commands(Group):
    """The top-level group: its commands' modules are imported on demand (:data:`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 (click's signature)
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            with uncollected():
                importlib.import_module(f"pharaon.cli.{COMMANDS[cmd_name]}")
        return super().get_command(ctx, cmd_name)


@contextmanager
def uncollected() -> Iterator[None]:
    """Import without garbage collections, then freeze what was imported: modules, classes
    and numba's types live as long as the process, so scanning them is wasted work."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


app = Commands(
    name="pharaon",
    help="« Pharaon »: generate and prove blocks of game units, sell and play them.",
    no_args_is_help=True,
)

USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """End the command with one line on stderr saying what is wrong."""
    sys.stderr.write(f"pharaon: error: {message}\n")
    raise click.exceptions.Exit(code)
