"""The operator's watch over HTTP: ``GET /api/v1/operator/stock`` for the console, the same
figures in ``/metrics``, and the example alerting rules of deploy/prometheus/ reading only
metrics the server exposes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from pharaon.settings import Settings
from tests.conftest import BlockLoader, Player
from tests.web.test_observe import _samples, _value
from tests.web.test_operator_api import _log_in, _operator

RULES = Path(__file__).parents[2] / "deploy" / "prometheus" / "alerts.yml"


def test_the_watch_for_the_console_and_in_the_metrics(
    client: TestClient, engine: Engine, settings: Settings, load: BlockLoader, player: Player
) -> None:
    load(100, size=50)
    load(100, size=40, number=2)
    player.deposit(5_000)
    for _ in range(4):
        assert player.play(100, "auto").status_code == 201
    analyst = _log_in(
        client, "eve@example.org", _operator(engine, settings, "eve@example.org", "analyst")
    )
    assert client.get("/api/v1/operator/stock").status_code == 401
    watch = client.get("/api/v1/operator/stock", headers=analyst)
    assert watch.status_code == 200, watch.text
    found = watch.json()
    assert found["stock"] == [
        {
            "price_cents": 100,
            "on_sale": 46,
            "blocks_behind": 1,
            "units_behind": 40,
            "sold_last_day": 4,
            "hours_left": 86 * 24 / 4,
        }
    ]
    [payout] = found["payouts"]
    assert (payout["units"], payout["stakes_cents"]) == (4, 400)
    # 86 units are under the default 100,000: an alert; a lot of 1,000 € none here.
    assert {(a["kind"], a["price_cents"]) for a in found["alerts"]} >= {("low_stock", 100)}

    samples = _samples(client.get("/metrics").text)
    assert _value(samples, "pharaon_stock_units", price_cents="100") == 86
    assert _value(samples, "pharaon_stock_blocks_behind", price_cents="100") == 1
    assert _value(samples, "pharaon_stock_hours_left", price_cents="100") == 86 * 24 / 4
    assert _value(samples, "pharaon_payout_day_ratio", price_cents="100") == (
        payout["payout_bp"] / 10_000
    )
    low = _value(samples, "pharaon_payout_day_band_low_ratio", price_cents="100")
    high = _value(samples, "pharaon_payout_day_band_high_ratio", price_cents="100")
    assert (low, high) == (payout["band_low_bp"] / 10_000, payout["band_high_bp"] / 10_000)
    kinds = {a["kind"] for a in found["alerts"]}
    for kind in ("low_stock", "payout_band", "large_lot"):
        expected = sum(a["kind"] == kind for a in found["alerts"])
        assert _value(samples, "pharaon_alerts", kind=kind) == expected, kinds


def test_the_alerting_rules_read_metrics_the_server_exposes(
    client: TestClient, load: BlockLoader, player: Player
) -> None:
    load(100, size=50)
    player.deposit(1_000)
    assert player.play(100, "auto").status_code == 201
    exposed = {f.name for f in text_string_to_metric_families(client.get("/metrics").text)}
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    assert {r["alert"] for r in rules} >= {
        "PharaonStockLow",
        "PharaonPayoutOutOfBand",
        "PharaonLargeLot",
    }
    for rule in rules:
        names = set(re.findall(r"\b(pharaon_[a-z_]+)\b", rule["expr"]))
        assert names, rule["alert"]
        assert names <= exposed, (rule["alert"], names - exposed)
