"""Two admins on two application instances (one PostgreSQL) decide one withdrawal at once, and
two verify one identity at once: each is decided once (one 200 or 201, the others 409), the
money moves once, and the audit holds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from pharaon.service import audit
from pharaon.settings import Settings
from pharaon.store.tables import AuditRecord, IdentityCheck
from tests.conftest import Player
from tests.web.test_operator_api import _log_in, _operator
from tests.web.test_races import _at_once, database_url, servers
from tests.web.test_withdrawals import DOCUMENT, withdraw

pytestmark = pytest.mark.postgres
__all__ = ["database_url", "servers"]  # the PostgreSQL-only fixtures of test_races


def _admins(servers: list[TestClient], engine: Engine, settings: Settings) -> list[dict[str, str]]:
    admins = []
    for n, client in enumerate(servers):
        secret = _operator(engine, settings, f"ops{n}@example.org", "admin")
        admins.append(_log_in(client, f"ops{n}@example.org", secret))
    return admins


def _post(
    servers: list[TestClient], admins: list[dict[str, str]], path: str, body: object
) -> Callable[[TestClient], int]:
    def one(client: TestClient) -> int:
        headers = admins[servers.index(client)]
        return int(client.post(f"/api/v1{path}", json=body, headers=headers).status_code)

    return one


def _kinds(engine: Engine) -> Counter[str]:
    with engine.connect() as conn:
        return Counter(conn.execute(select(AuditRecord.kind)).scalars())


def test_two_admins_verify_one_identity_once(
    servers: list[TestClient], engine: Engine, settings: Settings
) -> None:
    player = Player(servers[0], "ana@example.org")
    admins = _admins(servers, engine, settings)
    path = f"/operator/players/{player.player_id}/identity"
    codes = Counter(
        _at_once(8, servers, _post(servers, admins, path, DOCUMENT), f"POST {path}", admins[0])
    )
    assert codes == {201: 1, 409: 7}, codes
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(IdentityCheck)).scalar_one() == 1
    assert _kinds(engine)["identity_verified"] == 1


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_two_admins_decide_one_withdrawal_once(
    servers: list[TestClient], engine: Engine, settings: Settings, decision: str
) -> None:
    player = Player(servers[0], "ana@example.org")
    admins = _admins(servers, engine, settings)
    r = servers[0].post(
        f"/api/v1/operator/players/{player.player_id}/identity", json=DOCUMENT, headers=admins[0]
    )
    assert r.status_code == 201, r.text
    player.deposit(300_000)
    asked = withdraw(player, 250_000).json()
    assert asked["state"] == "requested"
    path = f"/operator/withdrawals/{asked['withdrawal_id']}/{decision}"
    body = {"reason": "RIB au nom d'un tiers"} if decision == "reject" else {}
    one = _post(servers, admins, path, body)
    # The warm-up (an empty body, 422) on the rejection's route: only it has a body to parse.
    warm_up = "POST /operator/withdrawals/1/reject"
    codes = Counter(_at_once(8, servers, one, warm_up, admins[0]))
    assert codes == {200: 1, 409: 7}, codes
    assert player.balance() == (300_000 if decision == "reject" else 50_000)
    kinds = _kinds(engine)
    assert kinds["withdrawal_paid" if decision == "approve" else "withdrawal_rejected"] == 1
    with engine.connect() as conn, conn.begin():
        report = audit.run_audit(connection=conn)
    assert report.ok, report.failures
