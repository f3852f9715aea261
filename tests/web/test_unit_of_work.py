"""Every route that takes the request's session ends its unit of work itself, on its own
thread, before it returns (docs/architecture.md, « Who owns the unit of work »): a route that
left it to the dependency's exit would hold SQLite's writer or PostgreSQL's rows while FastAPI
waits for another thread, and a route that forgot it would lose its writes."""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

ROUTERS = Path(str(resources.files("pharaon.web").joinpath("routers")))
METHODS = {"get", "post", "put", "patch", "delete"}


def _routes_with_a_session() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in sorted(ROUTERS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            is_route = any(
                isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr in METHODS
                for d in node.decorator_list
            )
            takes_session = any(
                isinstance(a.annotation, ast.Name) and a.annotation.id == "SessionDep"
                for a in node.args.args + node.args.kwonlyargs
            )
            if is_route and takes_session:
                found.append((f"{path.name}:{node.name}", node))
    return found


def _commits(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "commit"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "session"
        for n in ast.walk(function)
    )


def test_every_route_with_a_session_commits_it() -> None:
    routes = _routes_with_a_session()
    assert len(routes) >= 15  # the players', the protection and the operator's routes
    assert [name for name, function in routes if not _commits(function)] == []


def test_the_check_sees_a_route_that_forgets() -> None:
    forgetful = ast.parse(
        "@router.post('/x')\ndef x(session: SessionDep) -> None:\n    service.do(session=session)\n"
    ).body[0]
    assert isinstance(forgetful, ast.FunctionDef)
    assert not _commits(forgetful)
