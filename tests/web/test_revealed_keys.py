"""Keys revealed at close over HTTP: ``POST /operator/blocks/{id}/keys`` (an admin's) and the
public ``GET /audit/blocks/{id}/keys``; on both databases."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.keys import commitment
from pharaon.service import approvals, loading
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from tests.conftest import Player
from tests.web.test_operator_api import _log_in, _operator

VENDOR = bytes(range(1, 33))
OPERATOR = bytes(range(101, 133))
SIZE = 16


def load_with_keys(
    engine: Engine,
    vendor: bytes,
    operator: bytes,
    *,
    price_cents: int = 100,
    size: int = SIZE,
    approve: bool = True,
) -> int:
    """A test block of ``size`` units made from ``vendor`` and ``operator``, loaded and (if
    ``approve``) approved by an auditor, so on sale; its id."""
    block = generate_block(
        price_cents, design=test_design(size), vendor_key=vendor, operator_key=operator
    )
    with make_sessionmaker(engine).begin() as session:
        block_id = loading.load_block(
            session=session, block=block, allow_test=True, actor="test", now=utcnow()
        )
        if approve:
            approvals.verify_and_approve(
                session=session, block_id=block_id, actor="auditor:test", now=utcnow()
            )
    return block_id


def _keys(vendor: bytes = VENDOR, operator: bytes = OPERATOR) -> dict[str, str]:
    return {"vendor_key": vendor.hex(), "operator_key": operator.hex()}


def test_an_admin_reveals_a_sold_out_blocks_keys_and_anyone_reads_them(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    block_id = load_with_keys(engine, VENDOR, OPERATOR)
    admin = _log_in(
        client, "boss@example.org", _operator(engine, settings, "boss@example.org", "admin")
    )
    analyst = _log_in(
        client, "eve@example.org", _operator(engine, settings, "eve@example.org", "analyst")
    )
    path = f"/api/v1/operator/blocks/{block_id}/keys"
    public = f"/api/v1/audit/blocks/{block_id}/keys"
    r = client.get(public)
    assert (r.status_code, r.json()["error"]) == (404, "not_revealed")
    r = client.post(path, json=_keys(), headers=admin)
    assert (r.status_code, r.json()["error"]) == (409, "conflict")  # still on sale
    assert "is open" in r.json()["detail"]

    player.deposit(10_000)
    for _ in range(SIZE):
        assert player.play(100).status_code == 201
    [listed] = client.get("/api/v1/blocks").json()
    assert listed["state"] == "sold_out"

    assert client.post(path, json=_keys()).status_code == 401
    assert client.post(path, json=_keys(), headers=analyst).status_code == 403
    r = client.post(path, json=_keys(bytes(range(201, 233))), headers=admin)
    assert (r.status_code, r.json()["error"]) == (422, "validation_error")
    assert "vendor key is not" in r.json()["detail"]
    assert client.get(public).status_code == 404

    r = client.post(path, json=_keys(), headers=admin)
    assert r.status_code == 200, r.text
    published = r.json()
    assert published["block_id"] == block_id
    assert published["block_ids"] == [block_id]
    assert (published["vendor_key"], published["operator_key"]) == (VENDOR.hex(), OPERATOR.hex())
    assert published["vendor_key_commitment"] == listed["vendor_key_commitment"]
    assert published["operator_key_commitment"] == listed["operator_key_commitment"]
    assert published["operator_key_commitment"] == commitment(OPERATOR)
    assert published["design_digest"] == test_design(SIZE).digest
    assert client.get(public).json() == published  # no session needed
    again = client.post(path, json=_keys(), headers=admin)
    assert (again.status_code, again.json()) == (200, published)
    page = client.get(
        "/api/v1/operator/audit", params={"kind": "block_keys_revealed"}, headers=admin
    ).json()
    assert page["total"] == 1
    assert page["lines"][0]["actor"] == "operator:boss@example.org"


def test_a_key_is_checked_at_the_door_and_never_repeated(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    admin = _log_in(
        client, "boss@example.org", _operator(engine, settings, "boss@example.org", "admin")
    )
    good = VENDOR.hex()
    for bad in ("zz" * 16, "ab" * 15, "ab" * 16 + "a", "ab" * 65, "", 12):
        for body in ({"vendor_key": bad, "operator_key": good},
                     {"vendor_key": good, "operator_key": bad}):  # fmt: skip
            r = client.post("/api/v1/operator/blocks/1/keys", json=body, headers=admin)
            assert (r.status_code, r.json()["error"]) == (422, "validation_error"), body
            assert good not in r.text
            if isinstance(bad, str) and bad:
                assert bad not in r.text
    r = client.post("/api/v1/operator/blocks/1/keys", json=_keys(), headers=admin)
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = client.get("/api/v1/audit/blocks/1/keys")
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    assert client.get("/api/v1/audit/blocks/0/keys").status_code == 422
