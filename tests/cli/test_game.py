from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from pharaon.cli import app
from pharaon.game.rules import BASE_PRICE_CENTS, rules

runner = CliRunner()
TICKET = "JJJJSOYXPOYXSOYX-OYXSJJPOXSYOJJPO-SOYXJJPOXSYOPYOX-YXOSPOXSOYXJSPYO"


def test_evaluate_prints_combinations_and_lot() -> None:
    result = runner.invoke(app, ["evaluate", TICKET])
    assert result.exit_code == 0, result.output
    assert "grid 1 row 1" in result.output
    assert "croix" in result.output
    assert result.output.strip().endswith("lot: 11,00 €")


def test_evaluate_json_is_one_object() -> None:
    result = runner.invoke(app, ["evaluate", TICKET, "--stake", "3", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["prize_cents"] == 3_300
    assert [c["kind"] for c in data["combinations"]] == ["line", "bonus"]
    assert data["combinations"][1] == {
        "kind": "bonus",
        "symbol": "X",
        "grid": None,
        "cells": [[1, 3, 4], [2, 3, 1], [1, 4, 4], [3, 1, 4]],
        "gain_cents": 3_000,
    }


def test_a_malformed_ticket_exits_2_with_one_line() -> None:
    result = runner.invoke(app, ["evaluate", TICKET[:-1] + "Q"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "unknown symbol 'Q' at position 67" in lines[0]


def test_a_five_group_exits_2() -> None:
    five = "PYOXJSPYOXJSPYOX-PYOXJSPYOXJSPYOX-PYOXJSPYOXJSPYOX-PYOXJSPYOXJSPYOX"
    chars = list(five)
    for i in (10, 11, 14, 15):  # grid 1's bonus square, all chacal
        chars[i] = "J"
    chars[17 + 8] = "J"  # and one touching it in grid 2
    result = runner.invoke(app, ["evaluate", "".join(chars)])
    assert result.exit_code == 2
    assert "group of 5 J cells" in result.stderr


def test_the_stake_defaults_to_the_rules_first_price() -> None:
    euros = rules().prices_cents[0] // BASE_PRICE_CENTS
    alone = runner.invoke(app, ["evaluate", TICKET, "--json"])
    named = runner.invoke(app, ["evaluate", TICKET, "--json", "--stake", str(euros)])
    assert alone.exit_code == named.exit_code == 0, alone.output
    assert json.loads(alone.stdout) == json.loads(named.stdout)
    assert json.loads(alone.stdout)["prize_cents"] == 1_100 * euros
    shown = runner.invoke(app, ["evaluate", "--help"], terminal_width=200)
    assert f"[default: {euros}]" in shown.output


def test_a_bad_stake_exits_2() -> None:
    result = runner.invoke(app, ["evaluate", TICKET, "--stake", "4"])
    assert result.exit_code == 2
    assert "--stake must be 1, 2 or 3, got 4" in result.stderr


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pharaon", "evaluate", TICKET, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["prize_cents"] == 1_100
