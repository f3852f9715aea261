"""The regulator's trace (issue 27, item 4; service/traces.py), on both databases, through the
API as a player uses it: the account's opening, log-ins right and wrong, limit changes, a
refused deposit and a refused purchase, a cool-off, a log-out each join the audit chain with
the session's public id and the client's address; ``pharaon trace export`` writes them as JSON
Lines that validate against the shipped schema, with a manifest whose SHA-256 hold, and is an
audit record itself; no trace can be deleted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema_rs
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError

from pharaon.cli import app
from pharaon.service import sessions, traces
from pharaon.service.clock import utcnow
from pharaon.store.tables import AuditRecord
from tests.conftest import BlockLoader, Player

CLIENT = "testclient"  # the address Starlette's test client is seen from


def _export(database_url: str, out: Path, *extra: str) -> tuple[int, str]:
    today = utcnow().date().isoformat()
    args = ["trace", "export", "--from", today, "--to", today, "--out", str(out), *extra]
    result = CliRunner().invoke(app, [*args, "--database-url", database_url])
    return result.exit_code, result.stderr or repr(result.exception)


def _events(engine: Engine) -> list[tuple[str, str, dict[str, object]]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(AuditRecord.kind, AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.kind.in_(traces.EVENTS))
            .order_by(AuditRecord.seq)
        ).all()
    return [(kind, actor, json.loads(payload)) for kind, actor, payload in rows]


def test_a_player_s_events_are_traced_and_exported(
    client: TestClient,
    engine: Engine,
    database_url: str,
    load: BlockLoader,
    tmp_path: Path,
) -> None:
    load(100, size=30)
    ana = Player(client, "ana@example.org", moderators=False)  # opens the account, logs in
    ref = traces.session_id(sessions.token_digest(ana.token))
    wrong = client.post("/api/v1/sessions", json={"email": ana.email, "password": "not it!"})
    assert wrong.status_code == 401
    nobody = client.post("/api/v1/sessions", json={"email": "x@example.org", "password": "nope"})
    assert nobody.status_code == 401
    early = ana.post("/deposits", {"amount_cents": 100}, key="early")
    assert early.json()["error"] == "moderators_required"
    limits = {"daily_cents": 500, "weekly_cents": 5_000, "monthly_cents": None,
              "stake_weekly_cents": 5_000}  # fmt: skip
    assert ana.put("/me/limits", limits).status_code == 200
    refused = ana.post("/deposits", {"amount_cents": 600}, key="too-much")
    assert refused.json()["error"] == "deposit_limit"
    assert ana.post("/deposits", {"amount_cents": 100}, key="ok").status_code == 201
    poor = ana.play(200)  # 1 € in the wallet
    assert poor.json()["error"] == "insufficient_funds"
    assert ana.post("/me/cool-off", {"hours": 24}).status_code == 200
    assert ana.play(100).json()["error"] == "self_excluded"
    assert ana.client.delete("/api/v1/sessions/current", headers=ana.headers).status_code == 204

    found = _events(engine)
    me = f"player:{ana.player_id}"
    assert [(k, a) for k, a, _ in found] == [
        ("account_opened", me),
        ("login", me),
        ("login_failed", me),
        ("login_failed", "anonymous"),
        ("deposit_refused", me),
        ("deposit_limits", me),
        ("stake_limits", me),
        ("deposit_refused", me),
        ("deposit", me),
        ("purchase_refused", me),
        ("cool_off", me),
        ("purchase_refused", me),
        ("logout", me),
    ]
    where = [(p.get("session_id"), p.get("address")) for _, _, p in found]
    assert where == [
        (None, CLIENT),  # no session yet
        (ref, CLIENT),
        (None, CLIENT),
        (None, CLIENT),
        (ref, CLIENT),
        (ref, CLIENT),
        (ref, CLIENT),
        (ref, CLIENT),
        (None, None),  # the deposit's own record (the ledger's), not a trace of its request
        (ref, CLIENT),
        (ref, CLIENT),
        (ref, CLIENT),
        (ref, CLIENT),
    ]
    refusals = [(p["refusal"], p.get("amount_cents", p.get("stake_cents"))) for k, _, p in found
                if k.endswith("_refused")]  # fmt: skip
    assert refusals == [
        ("moderators_required", 100),
        ("deposit_limit", 600),
        ("insufficient_funds", 200),
        ("self_excluded", 100),
    ]

    out = tmp_path / "trace"
    code, err = _export(database_url, out)
    assert code == 0, err
    manifest = json.loads((out / traces.MANIFEST_FILE).read_text())
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    validator = jsonschema_rs.validator_for(json.loads((out / traces.SCHEMA_FILE).read_text()))
    lines = [json.loads(x) for x in (out / traces.TRACES_FILE).read_text().splitlines()]
    for record in lines:
        validator.validate(record)
    assert manifest["events"] == len(lines) == len(found)
    assert [x["event"] for x in lines] == [k for k, _, _ in found]
    assert lines[1]["session_id"] == ref
    assert lines[1]["client_address"] == CLIENT
    assert lines[1]["operator"] == "pharaon"
    assert lines[3]["player_id"] is None
    # The export is in the audit log; the same folder again is refused with one line.
    with engine.connect() as conn:
        kinds = conn.execute(select(AuditRecord.kind).order_by(AuditRecord.seq)).scalars().all()
    assert kinds[-1] == "trace_export"
    code, err = _export(database_url, out)
    assert (code, err) == (2, f"pharaon: error: {out} is not empty: give a new or empty folder\n")


def test_a_trace_cannot_be_deleted(client: TestClient, engine: Engine) -> None:
    Player(client, "ana@example.org", moderators=False)
    with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_log WHERE kind = 'account_opened'"))
    assert [k for k, _, _ in _events(engine)] == ["account_opened", "login"]


def test_an_export_with_its_days_reversed_is_refused(database_url: str, tmp_path: Path) -> None:
    args = ["trace", "export", "--from", "2026-02-02", "--to", "2026-02-01"]
    result = CliRunner().invoke(
        app, [*args, "--out", str(tmp_path / "x"), "--database-url", database_url]
    )
    assert result.exit_code == 2
    assert result.stderr == "pharaon: error: --to 2026-02-01 is before --from 2026-02-02\n"
    assert not (tmp_path / "x").exists()
