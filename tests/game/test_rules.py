from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pharaon.game.rules import RulesError, load_rules, parse_rules, rules


def _data() -> dict[str, Any]:
    text = resources.files("pharaon.game").joinpath("rules.toml").read_text("utf-8")
    return tomllib.loads(text)


def test_the_regulation_table_at_one_euro() -> None:
    table = rules().prize_table(100)
    assert [(t.lots, t.amount_cents) for t in table] == [
        (1, 2_500_000),
        (1, 100_000),
        (3, 50_000),
        (400, 2_000),
        (33_000, 900),
        (24_100, 500),
        (98_000, 150),
        (100_000, 100),
    ]
    assert sum(t.lots for t in table) == 255_505
    assert sum(t.lots * t.amount_cents for t in table) == 70_000_000
    cumulation = {t.amount_cents for t in table if t.cumulation_only}
    assert cumulation == {100_000, 2_000, 900, 500, 150}


@pytest.mark.parametrize(("price", "total"), [(200, 140_000_000), (300, 210_000_000)])
def test_two_and_three_euro_tables_scale_exactly(price: int, total: int) -> None:
    table = rules().prize_table(price)
    base = rules().prize_table(100)
    assert [t.lots for t in table] == [t.lots for t in base]
    assert [t.amount_cents for t in table] == [t.amount_cents * price // 100 for t in base]
    assert sum(t.lots * t.amount_cents for t in table) == total
    assert table[0].amount_cents == 25_000_00 * price // 100


def test_symbols_and_pay_tables() -> None:
    game = rules()
    assert game.symbol_codes == "PYOXJS"
    lines = {s.code: s.line_cents for s in game.symbols}
    bonus = {s.code: s.bonus_cents for s in game.symbols}
    assert lines == {"P": 2_500_000, "Y": 50_000, "O": 1_000, "X": 500, "J": 100, "S": 50}
    assert bonus == {"P": 50, "Y": 100, "O": 500, "X": 1_000, "J": 50_000, "S": None}
    assert [s.name for s in game.symbols] == [
        "pharaon",
        "pyramide",
        "œil",
        "croix",
        "chacal",
        "scarabée",
    ]


def test_stake_multiplier_and_its_error() -> None:
    assert [rules().multiplier(p) for p in (100, 200, 300)] == [1, 2, 3]
    with pytest.raises(ValueError, match="stake must be 100, 200, 300 cents, got 250"):
        rules().multiplier(250)


def test_a_table_that_misses_the_regulation_is_refused() -> None:
    data = _data()
    data["prizes"][-1]["lots"] = 99_999
    with pytest.raises(RulesError, match="255504 lots, the regulation 255505"):
        parse_rules(data)


def test_a_payout_that_is_not_seventy_percent_is_refused() -> None:
    data = _data()
    data["prizes"][-1]["amount_cents"] = 101
    data["totals"]["amount_cents"] = 70_100_000
    with pytest.raises(RulesError, match="is not 70 % of"):
        parse_rules(data)


def test_a_missing_or_mistyped_key_is_named() -> None:
    data = _data()
    del data["symbols"][2]["line_cents"]
    with pytest.raises(RulesError, match=r"symbols\[2\]: missing key 'line_cents'"):
        parse_rules(data)
    data = _data()
    data["prizes"][0]["lots"] = "one"
    with pytest.raises(RulesError, match=r"prizes\[0\]: lots must be an integer, got 'one'"):
        parse_rules(data)


def test_a_file_that_is_not_toml_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "rules.toml"
    bad.write_text("[game\n", "utf-8")
    with pytest.raises(RulesError, match="not valid TOML"):
        load_rules(bad)


def test_the_prices_are_said_in_euros() -> None:
    assert rules().prices_in_euros == "1, 2 or 3"
