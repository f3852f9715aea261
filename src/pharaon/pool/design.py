"""The composition plan of a block: for each lot, which combinations make it, and how many.

A design is data (``design.toml`` in the package, or a file given with ``--design``). It is
checked on load: symbol codes, each composition's gains summing to its lot, the cumulation rule,
counts summing to the prize table, and feasibility (each composition can be laid out on a board
without extra combinations).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pharaon.game.fields import field
from pharaon.game.rules import PrizeTier, rules
from pharaon.pool.layout import LayoutError, Plan, lay_out
from pharaon.pool.streams import KeyStream

MAX_BONUS_GROUPS = 4  # 16 bonus cells hold at most four 4-cell groups
_FEASIBILITY_UNITS = 64
_FEASIBILITY_ATTEMPTS = 20_000


def canonical(codes: str) -> str:
    """Symbol codes in the rules' symbol order (P Y O X J S): ``'JXJ'`` → ``'XJJ'``."""
    order = rules().symbol_codes
    return "".join(sorted(codes, key=lambda c: order.index(c) if c in order else len(order)))


class DesignError(ValueError):
    """A design that cannot make a valid block; the message names the lot and composition."""


@dataclass(frozen=True, slots=True)
class Composition:
    """``count`` units of a block win ``amount_cents`` (at 1 €) through these combinations.

    ``lines`` and ``bonus`` are strings of symbol codes, one letter per winning line or bonus
    group: ``lines="XJJJJ"`` is a croix line and four chacal lines.
    """

    amount_cents: int
    lines: str
    bonus: str
    count: int

    @property
    def combinations(self) -> int:
        return len(self.lines) + len(self.bonus)

    @property
    def key(self) -> str:
        """What the evaluator can see, e.g. ``'L:XJJJJ B:O'`` (codes in symbol order)."""
        return f"L:{canonical(self.lines)} B:{canonical(self.bonus)}"

    @property
    def label(self) -> str:
        """For people, e.g. ``'X line + 4 J lines + O bonus'``."""
        parts: list[str] = []
        for codes, word in ((self.lines, "line"), (self.bonus, "bonus")):
            for code in dict.fromkeys(codes):
                n = codes.count(code)
                plural = "s" if n > 1 and word == "line" else ""
                parts.append(f"{n} {code} {word}{plural}" if n > 1 else f"{code} {word}")
        return " + ".join(parts) if parts else "no combination"

    def plan(self) -> Plan:
        codes = rules().symbol_codes
        return Plan(
            lines=tuple(codes.index(c) for c in self.lines),
            bonus=tuple(codes.index(c) for c in self.bonus),
        )

    def gain_cents(self) -> int:
        """The lot at 1 € these combinations add up to."""
        game = rules()
        total = sum(game.symbol(c).line_cents for c in self.lines)
        return total + sum(game.symbol(c).bonus_cents or 0 for c in self.bonus)


@dataclass(frozen=True, slots=True)
class Design:
    """A block's composition plan; amounts at 1 €, ``compositions`` largest lot first."""

    name: str
    block_size: int
    test: bool
    compositions: tuple[Composition, ...]

    def table(self) -> tuple[PrizeTier, ...]:
        """The prize table at 1 € this design makes (largest amount first)."""
        cumulation = {t.amount_cents: t.cumulation_only for t in rules().prizes}
        lots: dict[int, int] = {}
        for c in self.compositions:
            lots[c.amount_cents] = lots.get(c.amount_cents, 0) + c.count
        return tuple(
            PrizeTier(lots[a], a, cumulation.get(a, False)) for a in sorted(lots, reverse=True)
        )

    def prize_table(self, price_cents: int) -> tuple[PrizeTier, ...]:
        """The prize table of a block made from this design at ``price_cents``."""
        k = rules().multiplier(price_cents)
        return tuple(PrizeTier(t.lots, t.amount_cents * k, t.cumulation_only) for t in self.table())

    @property
    def winning_units(self) -> int:
        return sum(c.count for c in self.compositions)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "block_size": self.block_size,
            "test": self.test,
            "compositions": [
                {
                    "amount_cents": c.amount_cents,
                    "lines": c.lines,
                    "bonus": c.bonus,
                    "count": c.count,
                }
                for c in self.compositions
            ],
        }

    @property
    def digest(self) -> str:
        """SHA-256 (hex) of the design's canonical JSON (sorted keys, no spaces)."""
        text = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _field(table: dict[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    if default is None:
        return field(table, key, kind, where, error=DesignError)
    return field(table, key, kind, where, error=DesignError, default=default)


def parse_design(data: dict[str, Any], *, feasibility: bool = True) -> Design:
    """Build and check a :class:`Design` from a parsed TOML document (``feasibility``: also
    lay out a few units of each composition: too slow for every start, so the packaged design
    leaves it to the tests)."""
    head = _field(data, "design", dict, "design file")
    name = _field(head, "name", str, "[design]")
    block_size = _field(head, "block_size", int, "[design]")
    test = _field(head, "test", bool, "[design]", default=False)
    compositions: list[Composition] = []
    for i, lot in enumerate(_field(data, "lot", list, "design file")):
        where = f"lot {i + 1}"
        if not isinstance(lot, dict):
            raise DesignError(f"{where}: expected a table, got {lot!r}")
        amount = _field(lot, "amount_cents", int, where)
        where = f"lot {amount} cents"
        for j, comp in enumerate(_field(lot, "composition", list, where)):
            if not isinstance(comp, dict):
                raise DesignError(f"{where}, composition {j + 1}: expected a table, got {comp!r}")
            here = f"{where}, composition {j + 1}"
            compositions.append(
                Composition(
                    amount_cents=amount,
                    lines=_field(comp, "lines", str, here, default=""),
                    bonus=_field(comp, "bonus", str, here, default=""),
                    count=_field(comp, "count", int, here),
                )
            )
    compositions.sort(key=lambda c: -c.amount_cents)
    design = Design(name, block_size, test, tuple(compositions))
    check_design(design, feasibility=feasibility)
    return design


def check_design(design: Design, *, feasibility: bool = True) -> None:
    """Raise :class:`DesignError` naming the first problem of ``design``."""
    game = rules()
    codes = game.symbol_codes
    if design.block_size <= 0:
        raise DesignError(f"block_size must be positive, got {design.block_size}")
    seen: set[str] = set()
    for c in design.compositions:
        where = f"lot {c.amount_cents} cents, composition {c.label!r}"
        for code in c.lines + c.bonus:
            if code not in codes:
                raise DesignError(f"{where}: unknown symbol {code!r}, expected one of {codes}")
        for code in c.bonus:
            if game.symbol(code).bonus_cents is None:
                raise DesignError(f"{where}: a {code} group pays nothing in the bonus grid")
        if c.combinations == 0:
            raise DesignError(f"{where}: a winning unit needs at least one combination")
        if len(c.bonus) > MAX_BONUS_GROUPS:
            raise DesignError(f"{where}: the bonus grid holds at most {MAX_BONUS_GROUPS} groups")
        if c.count <= 0:
            raise DesignError(f"{where}: count must be positive, got {c.count}")
        if c.gain_cents() != c.amount_cents:
            raise DesignError(
                f"{where}: the combinations add up to {c.gain_cents()} cents, not {c.amount_cents}"
            )
        if c.key in seen:
            raise DesignError(f"{where}: listed twice")
        seen.add(c.key)
    _check_table(design)
    if feasibility:
        _check_feasible(design)


def _check_table(design: Design) -> None:
    game = rules()
    want = {t.amount_cents: t for t in game.prizes}
    have = {t.amount_cents: t for t in design.table()}
    for amount in want.keys() - have.keys():
        raise DesignError(f"lot {amount} cents: no composition makes it")
    for amount in have.keys() - want.keys():
        raise DesignError(f"lot {amount} cents: not in the prize table")
    if not design.test:
        if design.block_size != game.block_size:
            raise DesignError(
                f"block_size must be {game.block_size} (a regulation block), got "
                f"{design.block_size}; mark a smaller design `test = true`"
            )
        for amount, tier in want.items():
            if have[amount].lots != tier.lots:
                raise DesignError(
                    f"lot {amount} cents: compositions count {have[amount].lots} units, the "
                    f"prize table {tier.lots}"
                )
    if design.winning_units > design.block_size:
        raise DesignError(
            f"{design.winning_units} winning units do not fit in a block of {design.block_size}"
        )
    for c in design.compositions:
        if want[c.amount_cents].cumulation_only and c.combinations < 2:
            raise DesignError(
                f"lot {c.amount_cents} cents, composition {c.label!r}: this lot is won only by "
                "cumulation, it needs two or more combinations"
            )


def _check_feasible(design: Design) -> None:
    # A fixed key is right here: this only checks that a layout exists, it decides nothing.
    stream = KeyStream(hashlib.sha256(b"pharaon/design-feasibility").digest())
    for c in design.compositions:
        try:
            lay_out(
                [c.plan()],
                np.zeros(_FEASIBILITY_UNITS, dtype=np.int64),
                layout_stream=stream,
                fill_stream=stream,
                max_attempts=_FEASIBILITY_ATTEMPTS,
            )
        except LayoutError:
            raise DesignError(
                f"lot {c.amount_cents} cents, composition {c.label!r}: cannot be laid out "
                "on a board without extra combinations"
            ) from None


def load_design(path: Path | None = None) -> Design:
    """Read and check a design file (the packaged ``design.toml`` by default)."""
    if path is None:
        return default_design()
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise DesignError(f"cannot read design file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise DesignError(f"design file {path} is not UTF-8 text") from None
    return _parse_text(text, str(path))


def _parse_text(text: str, where: str, *, feasibility: bool = True) -> Design:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DesignError(f"{where}: not valid TOML: {exc}") from exc
    return parse_design(data, feasibility=feasibility)


@cache
def default_design() -> Design:
    """The packaged regulation design, loaded and checked once. Its feasibility, the same for
    these same bytes every time, is proven by the test suite rather than at each start."""
    text = resources.files("pharaon.pool").joinpath("design.toml").read_text("utf-8")
    return _parse_text(text, "design.toml", feasibility=False)


@cache
def test_design(size: int = 1_000) -> Design:  # noqa: PT028  (not a test)
    """A small design of ``size`` units: the regulation's amounts and compositions, counts
    scaled down (each lot at least 1), marked test. Builds a valid block in milliseconds."""
    base = default_design()
    if size < len(rules().prizes) * 2:
        raise DesignError(f"a test design needs at least {len(rules().prizes) * 2} units")
    scale = size / base.block_size
    compositions: list[Composition] = []
    for tier in base.table():
        lots = max(1, round(tier.lots * scale))
        group = [c for c in base.compositions if c.amount_cents == tier.amount_cents]
        # Largest remainder: counts proportional to the regulation's, summing to `lots`.
        exact = [c.count * lots / tier.lots for c in group]
        counts = [int(x) for x in exact]
        by_rest = sorted(range(len(group)), key=lambda i: counts[i] - exact[i])
        for i in by_rest[: lots - sum(counts)]:
            counts[i] += 1
        compositions += [
            Composition(c.amount_cents, c.lines, c.bonus, n)
            for c, n in zip(group, counts, strict=True)
            if n > 0
        ]
    design = Design(f"{base.name}-test-{size}", size, True, tuple(compositions))
    check_design(design, feasibility=False)
    return design


# Not a test, though its name starts with "test": pytest must not collect it where imported.
test_design.__test__ = False  # type: ignore[attr-defined]
