from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner

from pharaon.cli import app

runner = CliRunner()


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    """Every command path under ``group``, as click finds them (loading their modules)."""
    context = click.Context(group)
    found = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, f"pharaon {' '.join([*prefix, name])} is listed but absent"
        found.append([*prefix, name])
        if isinstance(command, click.Group):
            found += _commands(command, [*prefix, name])
    return found


def test_every_command_has_help_text() -> None:
    root = app
    commands = _commands(root, [])
    assert ["evaluate"] in commands
    for path in commands:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, path
        command: Any = root
        for name in path:
            command = command.get_command(click.Context(command), name)
        assert (command.help or "").strip(), f"pharaon {' '.join(path)} has no help text"
