"""An auditor's sign-off through the back office's API, on both databases: any operator reads
the verification, only an auditor who did not load the block approves it (201, then 409), a
tampered stored unit fails the verification and is refused; the block sells only once
approved."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, update

from pharaon.service import loading
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.tables import AuditRecord, UnitRow
from pharaon.store.transactions import Transactions
from tests.conftest import Player, make_block
from tests.web.test_operator_api import _log_in, _operator

API = "/api/v1/operator"


def _load(engine: Engine, actor: str, *, number: int = 1) -> int:
    """A test block at 1 € loaded by ``actor``, not approved."""
    db = Transactions(engine)
    try:
        return db.write(
            loading.load_block,
            block=make_block(100, size=40, number=number),
            allow_test=True,
            actor=actor,
            now=utcnow(),
        )
    finally:
        db.close()


def _staff(client: TestClient, engine: Engine, settings: Settings) -> dict[str, dict[str, str]]:
    """The headers of an admin, an analyst and two auditors, by role (``auditor2``)."""
    headers = {}
    for name, role in (
        ("admin", "admin"),
        ("analyst", "analyst"),
        ("auditor", "auditor"),
        ("auditor2", "auditor"),
    ):
        secret = _operator(engine, settings, f"{name}@example.org", role)
        headers[name] = _log_in(client, f"{name}@example.org", secret)
    return headers


def _approvals(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(AuditRecord)
                .where(AuditRecord.kind == "block_approved")
            ).scalar_one()
        )


def test_an_auditor_approves_a_block_and_it_goes_on_sale(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    staff = _staff(client, engine, settings)
    block_id = _load(engine, "operator:admin@example.org")
    player.deposit(500)
    assert player.play(100).status_code == 503  # loaded, not approved: nothing on sale

    [listed] = client.get(f"{API}/blocks", headers=staff["analyst"]).json()
    assert (listed["state"], listed["loaded_by"], listed["approved_at"]) == (
        "loaded",
        "operator:admin@example.org",
        None,
    )
    r = client.get(f"{API}/blocks/{block_id}/verification", headers=staff["analyst"])
    assert r.status_code == 200, r.text
    figures = r.json()
    assert (figures["ok"], figures["problems"], figures["units"]) == (True, [], 40)
    assert figures["units_sha256_matched"]
    assert figures["merkle_root_matched"]
    assert all(lot["found"] == lot["table"] for lot in figures["lots"])
    # Every field docs/api.md lists, and all that the verification computed.
    fairness = figures["fairness"]
    listed_in_docs = {"ok", "alike", "gap_limit_pp", "order_level", "order_test_level"}
    assert set(fairness) == listed_in_docs | {"measures", "order"}
    assert fairness["order_test_level"] == pytest.approx(
        fairness["order_level"] / len(fairness["order"])
    )
    assert fairness["alike"] == all(m["alike"] for m in fairness["measures"])
    assert {"name", "label", "losing_pct", "winning_pct", "gap_pp", "alike"} == set(
        fairness["measures"][0]
    )
    assert {"name", "label", "p_value", "passed"} == set(fairness["order"][0])

    for role in ("admin", "analyst"):
        r = client.post(f"{API}/blocks/{block_id}/approval", headers=staff[role])
        assert (r.status_code, r.json()["error"]) == (403, "forbidden"), r.text
    r = client.post(f"{API}/blocks/{block_id}/approval", headers=staff["auditor"])
    assert r.status_code == 201, r.text
    approved = r.json()
    assert (approved["state"], approved["approved_by"]) == ("open", "operator:auditor@example.org")
    assert approved["verification"] == figures
    again = client.post(f"{API}/blocks/{block_id}/approval", headers=staff["auditor2"])
    assert (again.status_code, again.json()["error"]) == (409, "conflict"), again.text
    assert _approvals(engine) == 1

    [listed] = client.get(f"{API}/blocks", headers=staff["admin"]).json()
    assert (listed["state"], listed["approved_by"]) == ("open", "operator:auditor@example.org")
    assert listed["approved_at"] == approved["approved_at"]
    assert player.play(100).status_code == 201
    page = client.get(f"{API}/audit", params={"kind": "block_approved"}, headers=staff["admin"])
    [line] = page.json()["lines"]
    assert line["actor"] == "operator:auditor@example.org"


def test_unknown_blocks_and_the_loader_are_refused(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    staff = _staff(client, engine, settings)
    r = client.get(f"{API}/blocks/999/verification", headers=staff["auditor"])
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    r = client.post(f"{API}/blocks/999/approval", headers=staff["auditor"])
    assert (r.status_code, r.json()["error"]) == (404, "not_found")
    # An operator who loaded a block (an admin then, say) does not approve it as an auditor.
    block_id = _load(engine, "operator:auditor@example.org")
    r = client.post(f"{API}/blocks/{block_id}/approval", headers=staff["auditor"])
    assert (r.status_code, r.json()["error"]) == (403, "forbidden"), r.text
    assert "another auditor" in r.json()["detail"]
    r = client.post(f"{API}/blocks/{block_id}/approval", headers=staff["auditor2"])
    assert r.status_code == 201, r.text
    assert _approvals(engine) == 1


def test_a_tampered_stored_unit_is_refused_approval(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    staff = _staff(client, engine, settings)
    block_id = _load(engine, "operator:admin@example.org")
    with engine.begin() as conn:
        cells = bytearray(
            conn.execute(
                select(UnitRow.cells).where(UnitRow.block_id == block_id, UnitRow.serial == 3)
            ).scalar_one()
        )
        cells[10] = (cells[10] + 1) % 6
        conn.execute(
            update(UnitRow)
            .where(UnitRow.block_id == block_id, UnitRow.serial == 3)
            .values(cells=bytes(cells))
        )
    r = client.get(f"{API}/blocks/{block_id}/verification", headers=staff["auditor"])
    assert r.status_code == 200, r.text
    figures = r.json()
    assert not figures["ok"]
    assert not figures["units_sha256_matched"]
    assert not figures["merkle_root_matched"]
    r = client.post(f"{API}/blocks/{block_id}/approval", headers=staff["auditor"])
    assert (r.status_code, r.json()["error"]) == (409, "verification_failed"), r.text
    [listed] = client.get(f"{API}/blocks", headers=staff["admin"]).json()
    assert (listed["state"], listed["approved_at"]) == ("loaded", None)
    assert _approvals(engine) == 0
