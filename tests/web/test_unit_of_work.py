"""Every route that takes the request's session ends its unit of work itself, on its own
thread, before it returns (docs/architecture.md, « Who owns the unit of work »): a route that
left it to the dependency's exit would hold SQLite's writer or PostgreSQL's rows while FastAPI
waits for another thread, and a route that forgot it would lose its writes."""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path
from unittest.mock import ANY

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, insert, select

from pharaon.store.tables import LoginFailure
from pharaon.web.deps import SessionDep

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


@pytest.mark.parametrize(
    ("how", "status", "kept"),
    [("orm", 500, False), ("statement", 500, False), ("committed", 200, True)],
)
def test_a_route_that_returns_with_writes_uncommitted_answers_500(
    client: TestClient, engine: Engine, how: str, status: int, kept: bool
) -> None:
    # What the reading above cannot see: a route that commits on some paths only.
    key = f"unit-of-work-{how}@example.org"

    app: FastAPI = client.app  # type: ignore[assignment]

    @app.post(f"/test/{how}")
    def write(session: SessionDep) -> dict[str, str]:
        if how == "orm":
            session.add(LoginFailure(email=key, failures=1))  # not even flushed
        else:
            session.execute(insert(LoginFailure).values(email=key, failures=1))
        if how == "committed":
            session.commit()
        return {"done": how}

    # As a server answers: the 500 is sent (here the test client would re-raise the error).
    answer = TestClient(app, raise_server_exceptions=False).post(f"/test/{how}")
    assert answer.status_code == status, answer.text
    assert answer.json() == ({"done": how} if kept else {"error": "internal_error", "detail": ANY})
    with engine.connect() as connection:
        found = connection.execute(select(LoginFailure).where(LoginFailure.email == key)).all()
    assert bool(found) == kept
