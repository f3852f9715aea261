"""The back office's API: log-in with TOTP, blocks listed, an analyst refused (403) where an
admin deactivates; on both databases."""

from __future__ import annotations

import pyotp
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from pharaon.service import operators
from pharaon.service.clock import utcnow
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord
from tests.conftest import BlockLoader

PASSWORD = "a long operator password"


def _operator(engine: Engine, email: str, role: str) -> str:
    with make_sessionmaker(engine)() as session:
        created = operators.add(
            session=session, email=email, password=PASSWORD, role=role, actor="test", now=utcnow()
        )
        session.commit()
    return created.totp_secret


def _log_in(client: TestClient, email: str, secret: str) -> dict[str, str]:
    response = client.post(
        "/api/v1/operator/sessions",
        json={"email": email, "password": PASSWORD, "totp_code": pyotp.TOTP(secret).now()},
    )
    assert response.status_code == 200, response.text
    client.cookies.clear()
    return {"Authorization": f"Bearer {response.json()['token']}"}


def test_roles_and_totp(client: TestClient, engine: Engine, load: BlockLoader) -> None:
    block_id = load(100, size=30)
    admin_secret = _operator(engine, "boss@example.org", "admin")
    analyst_secret = _operator(engine, "eve@example.org", "analyst")

    assert client.get("/api/v1/operator/blocks").status_code == 401
    bad = client.post(
        "/api/v1/operator/sessions",
        json={"email": "boss@example.org", "password": PASSWORD, "totp_code": "12345"},
    )
    assert bad.status_code == 401
    assert "token" not in bad.json()

    analyst = _log_in(client, "eve@example.org", analyst_secret)
    me = client.get("/api/v1/operator/me", headers=analyst).json()
    assert me["role"] == "analyst"
    listed = client.get("/api/v1/operator/blocks", headers=analyst).json()
    assert [(b["block_id"], b["sold"], b["remaining"]) for b in listed] == [(block_id, 0, 30)]
    refused = client.post(
        f"/api/v1/operator/blocks/{block_id}/deactivate", json={"reason": "x"}, headers=analyst
    )
    assert refused.status_code == 403

    admin = _log_in(client, "boss@example.org", admin_secret)
    done = client.post(
        f"/api/v1/operator/blocks/{block_id}/deactivate",
        json={"reason": "withdrawn"},
        headers=admin,
    )
    assert done.status_code == 204, done.text
    listed = client.get("/api/v1/operator/blocks", headers=admin).json()
    assert listed[0]["state"] == "deactivated"
    with make_sessionmaker(engine)() as session:
        actor = session.execute(
            select(AuditRecord.actor).where(AuditRecord.kind == "block_deactivated")
        ).scalar_one()
    assert actor == "operator:boss@example.org"
    assert client.delete("/api/v1/operator/sessions/current", headers=admin).status_code == 204
    assert client.get("/api/v1/operator/me", headers=admin).status_code == 401
