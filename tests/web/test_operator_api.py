"""The back office's API: log-in with TOTP, blocks listed, an analyst refused (403) where an
admin deactivates, the regulator's export as a zip; on both databases."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pyotp
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from pharaon.pool.blockfile import write_block
from pharaon.service import operators, passwords, sealing
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, LedgerEntry
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader, Player, make_block

PASSWORD = "a long operator password"


def _operator(engine: Engine, settings: Settings, email: str, role: str) -> str:
    """Add an operator as ``pharaon operators add`` does; its TOTP secret."""
    db = Transactions(engine)
    try:
        created = db.write(
            operators.add,
            email=operators.check_new(email=email, password=PASSWORD, role=role),
            password_hash=passwords.hash_password(PASSWORD),
            role=role,
            actor="test",
            now=utcnow(),
            sealer=sealing.load(settings.keys_dir, create=True),
        )
    finally:
        db.close()
    return created.totp_secret


def _log_in(client: TestClient, email: str, secret: str) -> dict[str, str]:
    response = client.post(
        "/api/v1/operator/sessions",
        json={"email": email, "password": PASSWORD, "totp_code": pyotp.TOTP(secret).now()},
    )
    assert response.status_code == 200, response.text
    client.cookies.clear()
    return {"Authorization": f"Bearer {response.json()['token']}"}


def test_roles_and_totp(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader
) -> None:
    block_id = load(100, size=30)
    admin_secret = _operator(engine, settings, "boss@example.org", "admin")
    analyst_secret = _operator(engine, settings, "eve@example.org", "analyst")

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


def test_sales_move_after_purchases_and_the_audit_is_paged_and_checked(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    load(200, size=30, number=2)
    analyst = _log_in(
        client, "eve@example.org", _operator(engine, settings, "eve@example.org", "analyst")
    )
    before = client.get("/api/v1/operator/sales", headers=analyst).json()
    assert (before["stakes_cents"], before["prizes_cents"], before["payout_bp"]) == (0, 0, None)
    assert before["planned_payout_bp"] == 7000
    liability_before = before["liability_cents"]
    assert liability_before > 0

    player.deposit(10_000)
    won = 0
    for stake in (100, 100, 200):
        r = player.play(stake)
        assert r.status_code == 201, r.text
        won += int(r.json()["prize_cents"])
    after = client.get("/api/v1/operator/sales", headers=analyst).json()
    assert after["stakes_cents"] == 400
    assert after["prizes_cents"] == won
    assert after["payout_bp"] == won * 10_000 // 400
    assert after["liability_cents"] == liability_before - won
    today = utcnow().date().isoformat()
    assert [(x["day"], x["price_cents"], x["plays"]) for x in after["lines"]] == [
        (today, 100, 2),
        (today, 200, 1),
    ]
    none = client.get("/api/v1/operator/sales", params={"until": "2000-01-01"}, headers=analyst)
    assert none.json()["lines"] == []
    for bad in ({"since": "yesterday"}, {"until": "9999-12-31"}):
        refused = client.get("/api/v1/operator/sales", params=bad, headers=analyst)
        assert refused.status_code == 422, bad

    page = client.get("/api/v1/operator/audit", params={"limit": 2}, headers=analyst).json()
    assert len(page["lines"]) == 2
    assert page["total"] > 2
    seqs = [x["seq"] for x in page["lines"]]
    assert seqs == sorted(seqs, reverse=True)
    added = client.get(
        "/api/v1/operator/audit", params={"kind": "operator_added"}, headers=analyst
    ).json()
    assert added["total"] == 1
    assert added["lines"][0]["actor"] == "test"
    check = client.post("/api/v1/operator/audit/check", headers=analyst).json()
    assert check["ok"] is True
    assert any(c["code"] == "audit_chain" and c["passed"] for c in check["checks"])


def test_upload_a_block_and_read_a_player(
    client: TestClient, engine: Engine, settings: Settings, player: Player, tmp_path: Path
) -> None:
    admin = _log_in(
        client, "boss@example.org", _operator(engine, settings, "boss@example.org", "admin")
    )
    analyst = _log_in(
        client, "eve@example.org", _operator(engine, settings, "eve@example.org", "analyst")
    )
    path = tmp_path / "b.parquet"
    write_block(make_block(100, size=30, number=7), path)

    def upload(headers: dict[str, str], content: bytes) -> Any:
        files = {"file": ("b.parquet", content, "application/octet-stream")}
        return client.post("/api/v1/operator/blocks", files=files, headers=headers)

    assert upload(analyst, path.read_bytes()).status_code == 403
    refused = upload(admin, b"not a block file")
    assert refused.status_code == 409
    assert refused.json()["error"] == "block_refused"
    assert client.get("/api/v1/operator/blocks", headers=analyst).json() == []
    loaded = upload(admin, path.read_bytes())
    assert loaded.status_code == 201, loaded.text
    assert upload(admin, path.read_bytes()).status_code == 409

    player.deposit(500)
    assert player.play(100).status_code == 503  # loaded: off sale until an auditor approves
    auditor = _log_in(
        client, "aud@example.org", _operator(engine, settings, "aud@example.org", "auditor")
    )
    block_id = loaded.json()["block_id"]
    approved = client.post(f"/api/v1/operator/blocks/{block_id}/approval", headers=auditor)
    assert approved.status_code == 201, approved.text
    assert player.play(100).status_code == 201
    found = client.get("/api/v1/operator/players", params={"email": "ANA@"}, headers=analyst)
    assert [p["player_id"] for p in found.json()] == [player.player_id]
    assert (
        client.get("/api/v1/operator/players", params={"email": "%"}, headers=analyst).json() == []
    )
    folder = client.get(f"/api/v1/operator/players/{player.player_id}", headers=analyst).json()
    assert folder["player"]["balance_cents"] == player.balance()
    assert len(folder["plays"]) == 1
    assert sum(x["amount_cents"] for x in folder["ledger"]) == folder["player"]["balance_cents"]
    assert folder["limits"]["daily_cents"] is None
    assert client.get("/api/v1/operator/players/99999", headers=analyst).status_code == 404
    # Values the database would refuse are refused at the door, on both databases.
    for route, params in [
        ("/players", {"email": "ana\x00"}),
        ("/players/99999999999", {}),
        ("/audit", {"offset": "9223372036854775808"}),
        ("/audit", {"kind": "sale\x00"}),
        ("/audit", {"actor": "\x00"}),
    ]:
        r = client.get(f"/api/v1/operator{route}", params=params, headers=analyst)
        assert (r.status_code, r.json()["error"]) == (422, "validation_error"), (route, r.text)


def test_export_as_a_zip_names_who_took_it(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader, player: Player
) -> None:
    load(100, size=30)
    secret = _operator(engine, settings, "eve@example.org", "analyst")
    analyst = _log_in(client, "eve@example.org", secret)
    player.deposit(1_000)
    won = sum(int(player.play(stake).json()["prize_cents"]) for stake in (100, 100, 100))
    today = utcnow().date().isoformat()
    period = {"from": today, "to": today}

    assert client.post("/api/v1/operator/exports", json=period).status_code == 401
    backwards = client.post(
        "/api/v1/operator/exports", json={"from": today, "to": "2000-01-01"}, headers=analyst
    )
    assert backwards.status_code in (400, 422)
    assert "error" in backwards.json()
    for bad in ({"from": "soon"}, {"from": today, "to": "9999-12-31"}, {**period, "x": 1}):
        refused = client.post("/api/v1/operator/exports", json=bad, headers=analyst)
        assert refused.status_code == 422, bad
        assert refused.json()["error"] == "validation_error"

    answer = client.post("/api/v1/operator/exports", json=period, headers=analyst)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/zip"
    assert f"pharaon-export-{today}-{today}.zip" in answer.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    assert manifest["amounts"] == "integer cents"
    assert manifest["sha256"] == {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}
    assert set(files) == {
        f"{t}.{s}" for t in ("plays", "ledger_entries", "audit_records") for s in ("csv", "parquet")
    }

    def rows(name: str) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(files[name].decode("utf-8"))))

    plays = rows("plays.csv")
    assert sum(int(p["stake_cents"]) for p in plays) == 300
    assert sum(int(p["prize_cents"]) for p in plays) == won
    entries = rows("ledger_entries.csv")
    with make_sessionmaker(engine)() as session:
        in_ledger = dict(
            session.execute(
                select(LedgerEntry.account_id, func.sum(LedgerEntry.amount_cents)).group_by(
                    LedgerEntry.account_id
                )
            ).all()
        )
        exporter = session.execute(
            select(AuditRecord.actor, AuditRecord.payload).where(AuditRecord.kind == "export")
        ).one()
    in_csv: dict[int, int] = {}
    for e in entries:
        in_csv[int(e["account_id"])] = in_csv.get(int(e["account_id"]), 0) + int(e["amount_cents"])
    assert in_csv == {k: int(v) for k, v in in_ledger.items()}
    assert sum(in_csv.values()) == 0  # double entry
    assert exporter.actor == "operator:eve@example.org"
    assert json.loads(exporter.payload)["sha256"] == manifest["sha256"]


def test_the_console_page_and_the_export_contract(client: TestClient) -> None:
    page = client.get("/operator/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>" not in page.text
    assert "style=" not in page.text
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text):
        assert client.get(asset).status_code == 200, asset
    spec = client.get("/api/v1/openapi.json").json()["paths"]["/api/v1/operator/exports"]["post"]
    assert "application/zip" in spec["responses"]["200"]["content"]
    assert {"401", "403", "422"} <= set(spec["responses"])


def test_operator_log_ins_are_throttled_per_account_and_per_address(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    secrets = {n: _operator(engine, settings, f"{n}@example.org", "admin") for n in ("ann", "bob")}

    def attempt(email: str, password: str, code: str) -> Any:
        return client.post(
            "/api/v1/operator/sessions",
            json={"email": email, "password": password, "totp_code": code},
        )

    for _ in range(5):  # Settings.lockout_failures
        assert attempt("ann@example.org", "wrong password", "123456").status_code == 401
    locked = attempt("ann@example.org", PASSWORD, pyotp.TOTP(secrets["ann"]).now())
    assert locked.status_code == 429, locked.text
    assert locked.json()["error"] == "locked_out"
    # From this address, 15 more failures across other accounts make the 20 of
    # Settings.lockout_address_failures: bob, never wrong himself, is locked out too.
    for n in range(15):
        assert attempt(f"nobody{n}@example.org", PASSWORD, "123456").status_code == 401
    bob = attempt("bob@example.org", PASSWORD, pyotp.TOTP(secrets["bob"]).now())
    assert bob.status_code == 429, bob.text
    # Players' log-ins from the address keep their own count.
    again = client.post(
        "/api/v1/sessions", json={"email": player.email, "password": player.password}
    )
    assert again.status_code == 200, again.text


def test_a_wrong_totp_key_file_is_said_plainly(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    secret = _operator(engine, settings, "boss@example.org", "admin")
    key_file = settings.keys_dir / sealing.KEY_FILE
    key_file.unlink()
    sealing.load(settings.keys_dir, create=True)  # another key, as if the wrong file came back
    response = client.post(
        "/api/v1/operator/sessions",
        json={
            "email": "boss@example.org",
            "password": PASSWORD,
            "totp_code": pyotp.TOTP(secret).now(),
        },
    )
    assert response.status_code == 500, response.text
    assert response.json()["error"] == "misconfigured"
    assert "key file" in response.json()["detail"]
