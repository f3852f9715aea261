"""Schemathesis fuzzes every ``/api/v1`` route of the OpenAPI document against a real server,
logged in and not, with valid and invalid input: no 5xx, every answer as documented, and the
audit clean afterwards. What it found is kept in test_bad_input.py as plain tests."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.failures import AcceptedNegativeData, FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance
from sqlalchemy import Engine

from pharaon.service.audit import run_audit
from pharaon.store.engine import make_sessionmaker
from tests.conftest import BlockLoader
from tests.web.live import LiveServer, http, set_moderators

pytestmark = pytest.mark.fuzz

# Per operation and mode: about 12 routes x 2 modes x 2 identities, bounded for 2 shared cores.
EXAMPLES = 12
PASSWORD = "long enough"
# Business rules the schema cannot say (an e-mail's shape, a birth date in the past, a stake
# of 100, 200 or 300) make valid-looking input refused with 422: that is no bug. Refusals of
# invalid input, status codes, error shapes and answers' schemas are all checked.
NOT_CHECKED = [positive_data_acceptance]


@pytest.fixture
def server(engine: Engine, database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    # Fuzzed log-ins all come from 127.0.0.1: its address lock-out would refuse our own.
    quiet = {"PHARAON_LOCKOUT_ADDRESS_FAILURES": "1000000"}
    live = LiveServer(database_url, tmp_path / "server.log", env=quiet)
    live.start()
    yield live
    live.stop()


def _bearer(base: str) -> dict[str, str]:
    """A fresh player with money, and its bearer token as headers."""
    email = f"fuzz-{secrets.token_hex(4)}@example.org"
    body = {"email": email, "password": PASSWORD, "birth_date": "1980-02-29"}
    assert http.post(f"{base}/api/v1/players", json=body).status_code == 201
    r = http.post(f"{base}/api/v1/sessions", json={"email": email, "password": PASSWORD})
    assert r.status_code == 200, r.text
    headers = {"Authorization": f"Bearer {r.json()['token']}"}
    set_moderators(base, headers)
    key = {"Idempotency-Key": secrets.token_hex(8)}
    r = http.post(f"{base}/api/v1/deposits", json={"amount_cents": 10_000}, headers=headers | key)
    assert r.status_code == 201, r.text
    return headers


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _too_large(failure: Exception) -> bool:
    """An invalid body refused 413 as over the body cap (web/guards.py), before its fields are
    read: refused, though not with the statuses schemathesis expects of invalid data."""
    return isinstance(failure, AcceptedNegativeData) and failure.status_code == 413


def _fuzz(operation: Any, base: str, headers: dict[str, str]) -> None:
    strategy = st.one_of(
        # JSON Schema counts 2.0 as an integer; the API takes integers strictly (money is
        # never a float), so a body with 2.0 is no valid input here.
        operation.as_strategy(GenerationMode.POSITIVE).filter(lambda c: not _has_float(c.body)),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        # The generated headers win, but a logged-in case keeps its token unless it sent one.
        sent = dict(headers) | dict(case.headers or {})
        try:
            case.call_and_validate(
                base_url=base, headers=sent, timeout=30, excluded_checks=NOT_CHECKED
            )
        except FailureGroup as found:
            if not all(_too_large(failure) for failure in found.exceptions):
                raise

    run()


def test_every_route(engine: Engine, load: BlockLoader, server: LiveServer) -> None:
    # A block at every stake, so that a purchase is never refused as sold out (503).
    for number, price in enumerate((100, 200, 300), start=1):
        load(price, size=400, number=number)
    base = server.url
    schema = schemathesis.openapi.from_url(f"{base}/api/v1/openapi.json")
    operations: list[Any] = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    paths = {op.path for op in operations}
    assert "/api/v1/plays" in paths
    # Logging out ends the token of the logged-in identity: last.
    operations.sort(key=lambda op: op.method == "delete" and op.path.startswith("/api/v1/sess"))
    for operation in operations:
        _fuzz(operation, base, {})
        _fuzz(operation, base, _bearer(base))
    assert http.get(f"{base}/api/v1/health").status_code == 200
    with make_sessionmaker(engine)() as session:
        report = run_audit(connection=session.connection())
    assert report.ok, report.failures
