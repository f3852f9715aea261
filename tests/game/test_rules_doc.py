"""docs/rules.md restates the rules that rules.toml holds as data: its tables must agree."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from pharaon.game.rules import rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def _section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## §{number}.")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _rows(section: str) -> list[list[str]]:
    """The body rows of the section's table, cells stripped (header and rule left out)."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _cents(amount: str) -> int:
    """``25 000 €`` or ``0.50 €`` -> cents."""
    euros = Decimal(amount.replace("€", "").replace(" ", "").replace("\u202f", ""))
    return int(euros * 100)


def test_the_symbol_table_is_the_rules_data() -> None:
    rows = _rows(_section(3))
    assert [r[1].strip("`") for r in rows] == [s.code for s in rules().symbols]
    for name, code, line, bonus in rows:
        symbol = rules().symbol(code.strip("`"))
        assert name == symbol.name
        assert _cents(line) == symbol.line_cents, code
        expected_bonus = None if bonus.startswith("—") else _cents(bonus)
        assert expected_bonus == symbol.bonus_cents, code


def test_the_prize_table_is_the_rules_data() -> None:
    rows = [r for r in _rows(_section(2)) if not r[0].startswith("**")]
    found = [
        (int(lots.replace(" ", "")), _cents(amount), cumulation == "yes")
        for lots, amount, cumulation in rows
    ]
    tiers = [(t.lots, t.amount_cents, t.cumulation_only) for t in rules().prizes]
    assert found == tiers
    total = _rows(_section(2))[-1]
    assert int(re.sub(r"\D", "", total[0])) == rules().winning_units
    assert f"{rules().payout_percent} %" in total[1]


def test_the_prices_and_block_size_are_the_rules_data() -> None:
    section = " ".join(_section(1).split())
    assert f"{rules().block_size:,} game units" in section
    euros = [f"{p // 100} €" for p in rules().prices_cents]
    assert f"**{', '.join(euros[:-1])} or {euros[-1]}**" in section
