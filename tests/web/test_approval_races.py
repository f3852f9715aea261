"""Two auditors on two application instances (one PostgreSQL) approve one loaded block at the
same moment: one approval (201), the other 409, one audit record, the block on sale once."""

from __future__ import annotations

from collections import Counter

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from pharaon.service import audit
from pharaon.settings import Settings
from pharaon.store.tables import AuditRecord, Block
from tests.web.test_approvals import _load
from tests.web.test_operator_api import _log_in, _operator
from tests.web.test_races import _at_once, database_url, servers

pytestmark = pytest.mark.postgres
__all__ = ["database_url", "servers"]  # the PostgreSQL-only fixtures of test_races


def test_two_auditors_approve_one_block_once(
    servers: list[TestClient], engine: Engine, settings: Settings
) -> None:
    block_id = _load(engine, "operator:admin@example.org")
    auditors = []
    for n, client in enumerate(servers):
        secret = _operator(engine, settings, f"auditor{n}@example.org", "auditor")
        auditors.append(_log_in(client, f"auditor{n}@example.org", secret))

    def approve(client: TestClient) -> int:
        headers = auditors[servers.index(client)]
        path = f"/api/v1/operator/blocks/{block_id}/approval"
        return int(client.post(path, headers=headers).status_code)

    # The warm-up (an empty body, 422) on a route any operator may take with a body: the
    # approval has none.
    warm_up = "POST /operator/exports"
    codes = Counter(_at_once(2, servers, approve, warm_up, auditors[0]))
    assert codes == {201: 1, 409: 1}, codes
    with engine.connect() as conn:
        records = conn.execute(
            select(AuditRecord.actor).where(AuditRecord.kind == "block_approved")
        ).all()
        state, approved_by = conn.execute(
            select(Block.state, Block.approved_by).where(Block.id == block_id)
        ).one()
        report = audit.run_audit(connection=conn)
    assert len(records) == 1
    assert (state, approved_by) == ("open", records[0].actor)
    assert report.ok, report.failures
