"""The rules of the game as data, loaded once from ``rules.toml`` and validated on load.

Everything that needs a symbol, a gain, a price or the prize table of a block reads it here.
Amounts are integer euro cents; tables are given at the base price (1 €) and scale exactly with
the stake (art. 3.2, 3.3).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pharaon.game.fields import field

BASE_PRICE_CENTS = 100


class RulesError(ValueError):
    """The rules file is inconsistent with itself or with the regulation."""


@dataclass(frozen=True, slots=True)
class Symbol:
    """One of the six symbols; ``index`` is its int8 code in unit arrays."""

    index: int
    code: str
    name: str
    name_en: str
    line_cents: int
    bonus_cents: int | None  # None: never wins in the bonus grid


@dataclass(frozen=True, slots=True)
class PrizeTier:
    """``lots`` units per block win ``amount_cents`` each."""

    lots: int
    amount_cents: int
    cumulation_only: bool


@dataclass(frozen=True, slots=True)
class Rules:
    name: str
    block_size: int
    prices_cents: tuple[int, ...]
    payout_percent: int
    symbols: tuple[Symbol, ...]
    prizes: tuple[PrizeTier, ...]  # at the base price, largest amount first

    def symbol(self, code: str) -> Symbol:
        """The symbol whose one-letter code is ``code``."""
        for symbol in self.symbols:
            if symbol.code == code:
                return symbol
        raise KeyError(f"unknown symbol code {code!r}")

    def multiplier(self, stake_cents: int) -> int:
        """How many times the 1 € gains a unit at ``stake_cents`` pays."""
        if stake_cents not in self.prices_cents:
            allowed = ", ".join(str(p) for p in self.prices_cents)
            raise ValueError(f"stake must be {allowed} cents, got {stake_cents}")
        return stake_cents // BASE_PRICE_CENTS

    def prize_table(self, price_cents: int) -> tuple[PrizeTier, ...]:
        """The prize table of a block sold at ``price_cents``."""
        k = self.multiplier(price_cents)
        return tuple(PrizeTier(t.lots, t.amount_cents * k, t.cumulation_only) for t in self.prizes)

    @property
    def prices_in_euros(self) -> str:
        """The prices as a person says them: ``1, 2 or 3``."""
        euros = [str(cents // BASE_PRICE_CENTS) for cents in self.prices_cents]
        return " or ".join([", ".join(euros[:-1]), euros[-1]] if len(euros) > 1 else euros)

    @property
    def symbol_codes(self) -> str:
        return "".join(s.code for s in self.symbols)

    @property
    def winning_units(self) -> int:
        return sum(t.lots for t in self.prizes)


def _require(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return field(table, key, kind, where, error=RulesError)


def parse_rules(data: dict[str, Any]) -> Rules:
    """Build and validate :class:`Rules` from the parsed TOML document."""
    game = _require(data, "game", dict, "rules")
    symbols = tuple(
        Symbol(
            index=i,
            code=_require(s, "code", str, f"symbols[{i}]"),
            name=_require(s, "name", str, f"symbols[{i}]"),
            name_en=_require(s, "name_en", str, f"symbols[{i}]"),
            line_cents=_require(s, "line_cents", int, f"symbols[{i}]"),
            bonus_cents=_require(s, "bonus_cents", int, f"symbols[{i}]")
            if "bonus_cents" in s
            else None,
        )
        for i, s in enumerate(_require(data, "symbols", list, "rules"))
    )
    prizes = tuple(
        PrizeTier(
            lots=_require(p, "lots", int, f"prizes[{i}]"),
            amount_cents=_require(p, "amount_cents", int, f"prizes[{i}]"),
            cumulation_only=_require(p, "cumulation_only", bool, f"prizes[{i}]"),
        )
        for i, p in enumerate(_require(data, "prizes", list, "rules"))
    )
    rules = Rules(
        name=_require(game, "name", str, "game"),
        block_size=_require(game, "block_size", int, "game"),
        prices_cents=tuple(_require(game, "prices_cents", list, "game")),
        payout_percent=_require(game, "payout_percent", int, "game"),
        symbols=symbols,
        prizes=prizes,
    )
    _validate(rules, _require(data, "totals", dict, "rules"))
    return rules


def _validate(rules: Rules, totals: dict[str, Any]) -> None:
    codes = [s.code for s in rules.symbols]
    if len(codes) != 6 or len(set(codes)) != 6 or any(len(c) != 1 for c in codes):
        raise RulesError(f"symbols: expected 6 distinct one-letter codes, got {codes}")
    for s in rules.symbols:
        if s.line_cents <= 0 or (s.bonus_cents is not None and s.bonus_cents <= 0):
            raise RulesError(f"symbol {s.code}: gains must be positive cents")
    if rules.prices_cents != (100, 200, 300):
        raise RulesError(
            f"game.prices_cents must be [100, 200, 300], got {list(rules.prices_cents)}"
        )
    amounts = [t.amount_cents for t in rules.prizes]
    if amounts != sorted(set(amounts), reverse=True):
        raise RulesError("prizes: amounts must be distinct and listed largest first")
    if any(t.lots <= 0 or t.amount_cents <= 0 for t in rules.prizes):
        raise RulesError("prizes: lots and amounts must be positive")
    lots = rules.winning_units
    total = sum(t.lots * t.amount_cents for t in rules.prizes)
    want_lots = _require(totals, "winning_units", int, "totals")
    want_total = _require(totals, "amount_cents", int, "totals")
    if lots != want_lots:
        raise RulesError(f"prizes: the table holds {lots} lots, the regulation {want_lots}")
    if total != want_total:
        raise RulesError(f"prizes: the table pays {total} cents, the regulation {want_total}")
    sales = rules.block_size * BASE_PRICE_CENTS
    if total * 100 != sales * rules.payout_percent:
        raise RulesError(
            f"prizes: {total} cents is not {rules.payout_percent} % of {sales} cents of sales"
        )
    if lots > rules.block_size:
        raise RulesError("prizes: more winning units than units in a block")


def load_rules(path: Path | None = None) -> Rules:
    """Read and validate a rules file (the packaged ``rules.toml`` by default)."""
    if path is None:
        text = resources.files("pharaon.game").joinpath("rules.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"rules: not valid TOML: {exc}") from exc
    return parse_rules(data)


@cache
def rules() -> Rules:
    """The game's rules, loaded once."""
    return load_rules()
