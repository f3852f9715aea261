"""Each room imports only from the rooms above it (README, « The rooms »): game, pool, store,
service, then web and cli, which do not import each other. Imports inside functions count."""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

import pytest

PACKAGE = Path(str(resources.files("pharaon")))
ROOMS = ["game", "pool", "store", "service"]
MAY_IMPORT = {
    **{room: set(ROOMS[: i + 1]) for i, room in enumerate(ROOMS)},
    "web": {*ROOMS, "web"},
    "cli": {*ROOMS, "cli"},
}


def _imported_rooms(source: str) -> set[str]:
    """The rooms of ``pharaon`` that ``source`` imports, wherever the import stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from pharaon import web` names the room in the imported names.
            names = [node.module]
            if node.module == "pharaon":
                names = [f"pharaon.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "pharaon" and len(parts) > 1 and parts[1] in MAY_IMPORT:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("room", sorted(MAY_IMPORT))
def test_a_room_imports_only_from_the_rooms_above_it(room: str) -> None:
    files = sorted((PACKAGE / room).rglob("*.py"))
    assert files
    wrong = {
        str(path.relative_to(PACKAGE)): sorted(_imported_rooms(path.read_text()) - MAY_IMPORT[room])
        for path in files
    }
    assert {path: rooms for path, rooms in wrong.items() if rooms} == {}


def test_the_check_sees_an_import_inside_a_function() -> None:
    source = "def upgrade() -> None:\n    from pharaon.service import trees\n"
    assert _imported_rooms(source) == {"service"}
    assert _imported_rooms("from pharaon import web, __version__\n") == {"web"}
    assert _imported_rooms("import pharaon.cli.main\n") == {"cli"}
