from __future__ import annotations

from pathlib import Path

import pytest

from pharaon.game.rules import rules
from pharaon.pool.design import (
    Composition,
    DesignError,
    canonical,
    check_design,
    default_design,
    load_design,
    test_design,
)

HEAD = '[design]\nname = "t"\nblock_size = 1000\ntest = true\n'


def _lots(extra: str = "", skip: int | None = None) -> str:
    """A valid small test design's lots, one composition each; ``skip`` drops an amount."""
    simple = {
        2_500_000: 'lines = "P"',
        100_000: 'lines = "Y", bonus = "J"',
        50_000: 'lines = "Y"',
        2_000: 'lines = "OO"',
        900: 'lines = "XJJJJ"',
        500: 'lines = "JJJJ", bonus = "Y"',
        150: 'lines = "JS"',
        100: 'lines = "J"',
    }
    text = ""
    for amount, make in simple.items():
        if amount == skip:
            continue
        text += f"[[lot]]\namount_cents = {amount}\ncomposition = [{{ {make}, count = 2 }}]\n"
    return text + extra


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "design.toml"
    path.write_text(text, "utf-8")
    return path


def test_the_packaged_design_makes_the_regulation_table() -> None:
    design = default_design()
    assert not design.test
    assert design.block_size == rules().block_size
    table = design.table()
    assert [(t.lots, t.amount_cents) for t in table] == [
        (t.lots, t.amount_cents) for t in rules().prizes
    ]
    assert sum(c.count * c.amount_cents for c in design.compositions) == 70_000_000


def test_every_composition_of_the_packaged_design_can_be_laid_out() -> None:
    check_design(default_design(), feasibility=True)  # default_design() leaves it to this test


def test_every_composition_adds_up_and_cumulation_lots_have_two_combinations() -> None:
    cumulation = {t.amount_cents for t in rules().prizes if t.cumulation_only}
    for c in default_design().compositions:
        assert c.gain_cents() == c.amount_cents
        if c.amount_cents in cumulation:
            assert c.combinations >= 2, c.label


def test_several_compositions_for_the_big_lots() -> None:
    design = default_design()
    for amount in (2_000, 900, 500, 150, 100):
        assert sum(c.amount_cents == amount for c in design.compositions) >= 3


def test_the_examples_of_the_issue_are_in_the_design() -> None:
    keys = {(c.amount_cents, c.key) for c in default_design().compositions}
    assert (900, "L:XJJJJ B:") in keys
    assert (900, "L:JJJ B:YO") in keys
    assert (150, "L:JS B:") in keys
    assert (150, "L: B:PY") in keys


def test_labels_and_keys() -> None:
    c = Composition(900, "JXJJJ", "O", 1)
    assert c.key == "L:XJJJJ B:O"
    assert c.label == "4 J lines + X line + O bonus"
    assert canonical("SJP") == "PJS"


def test_load_design_from_a_file(tmp_path: Path) -> None:
    design = load_design(_write(tmp_path, HEAD + _lots()))
    assert design.test
    assert design.winning_units == 16


def test_the_digest_follows_the_content(tmp_path: Path) -> None:
    one = load_design(_write(tmp_path, HEAD + _lots()))
    two = load_design(_write(tmp_path, HEAD.replace('"t"', '"u"') + _lots()))
    assert one.digest != two.digest
    assert one.digest == load_design(_write(tmp_path, HEAD + _lots())).digest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEAD + _lots(skip=900), "lot 900 cents: no composition makes it"),
        (
            HEAD
            + _lots('[[lot]]\namount_cents = 300\ncomposition = [{ lines = "JJJ", count = 1 }]\n'),
            "not in the prize table",
        ),
        (
            HEAD.replace("test = true\n", "") + _lots(),
            "block_size must be 1000000",
        ),
        (HEAD + _lots().replace('lines = "JS"', 'lines = "JJ"'), "add up to 200 cents, not 150"),
        (HEAD + _lots().replace('lines = "JS"', 'lines = "JQ"'), "unknown symbol 'Q'"),
        (HEAD + _lots().replace('lines = "JS"', 'lines = "J", bonus = "S"'), "pays nothing"),
        (HEAD + _lots().replace('lines = "OO"', 'bonus = "X"'), "add up to 1000 cents, not 2000"),
        (
            HEAD + _lots().replace('lines = "JJJJ", bonus = "Y"', 'lines = "X"'),
            "only by cumulation",
        ),
        (
            HEAD + _lots().replace('{ lines = "P", count = 2 }', '{ lines = "P", count = 0 }'),
            "count must be positive",
        ),
        (HEAD + _lots().replace('lines = "JS"', 'bonus = "PPP"'), "cannot be laid out"),
        (HEAD + _lots().replace('lines = "JS"', 'bonus = "PPPPP"'), "at most 4 groups"),
        (HEAD + "[[lot]]\namount_cents = 100\n", "missing key 'composition'"),
        (HEAD + _lots().replace("count = 2", 'count = "two"', 1), "count must be an integer"),
        ("[design\n", "not valid TOML"),
        (HEAD.replace("block_size = 1000", "block_size = 10") + _lots(), "do not fit"),
    ],
)
def test_bad_designs_are_refused_with_a_clear_message(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(DesignError, match=message):
        load_design(_write(tmp_path, text))


def test_a_regulation_design_with_wrong_counts_is_refused(tmp_path: Path) -> None:
    text = Path(__file__).parents[2].joinpath("src/pharaon/pool/design.toml").read_text("utf-8")
    text = text.replace('{ lines = "J", count = 40_000 }', '{ lines = "J", count = 39_999 }')
    with pytest.raises(DesignError, match="lot 100 cents: compositions count 99999 units"):
        load_design(_write(tmp_path, text))


def test_a_missing_design_file(tmp_path: Path) -> None:
    with pytest.raises(DesignError, match="cannot read design file"):
        load_design(tmp_path / "nope.toml")


@pytest.mark.parametrize("size", [1_000, 10_000])
def test_test_designs_keep_the_amounts_and_scale_the_counts(size: int) -> None:
    design = test_design(size)
    assert design.test
    assert design.block_size == size
    assert {t.amount_cents for t in design.table()} == {t.amount_cents for t in rules().prizes}
    for tier, full in zip(design.table(), rules().prizes, strict=True):
        assert tier.lots == max(1, round(full.lots * size / 1_000_000))


def test_a_test_design_too_small() -> None:
    with pytest.raises(DesignError, match="at least 16 units"):
        test_design(10)
