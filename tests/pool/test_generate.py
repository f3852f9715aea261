from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from pharaon.game.batch import evaluate_batch
from pharaon.game.rules import rules
from pharaon.pool.blockfile import Block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.keys import SeedKeyError
from pharaon.pool.stats import winning_cells
from pharaon.pool.verify import composition_keys
from tests.conftest import OPERATOR, VENDOR


def test_the_block_holds_exactly_its_design(small_block: Block) -> None:
    design = test_design(1_000)
    result = evaluate_batch(small_block.units, 100)
    assert not result.malformed.any()
    assert np.array_equal(result.lots_cents, small_block.lots_cents)
    found = Counter(result.lots_cents[result.lots_cents > 0].tolist())
    assert found == {t.amount_cents: t.lots for t in design.table()}
    keys = composition_keys(result)
    have = Counter(
        (k, lot) for k, lot in zip(keys, result.lots_cents.tolist(), strict=True) if lot > 0
    )
    assert have == {(c.key, c.amount_cents): c.count for c in design.compositions}


def test_losing_units_hold_no_combination_at_all(small_block: Block) -> None:
    losing = small_block.lots_cents == 0
    result = evaluate_batch(small_block.units[losing])
    assert (result.line_counts == 0).all()
    assert (result.bonus_counts == 0).all()  # not even a scarab group


def test_the_manifest(small_block: Block) -> None:
    m = small_block.manifest
    design = test_design(1_000)
    assert (m.game, m.price_cents, m.emission, m.block_number) == ("Pharaon", 100, "E1", 1)
    assert m.test is True
    assert m.block_size == 1_000
    assert m.design_digest == design.digest
    assert m.prize_table == design.prize_table(100)
    assert sum(c.count for c in m.counts) == design.winning_units
    assert len(m.merkle_root) == 64
    assert len(m.units_sha256) == 64


@pytest.mark.parametrize("price", [200, 300])
def test_gains_scale_with_the_price(price: int) -> None:
    block = generate_block(price, design=test_design(1_000))
    table = test_design(1_000).prize_table(price)
    found = Counter(block.lots_cents[block.lots_cents > 0].tolist())
    assert found == {t.amount_cents: t.lots for t in table}
    assert max(found) == 2_500_000 * price // 100


def test_same_keys_same_block_other_keys_other_block(small_block: Block) -> None:
    again = generate_block(100, design=test_design(1_000), vendor_key=VENDOR, operator_key=OPERATOR)
    assert np.array_equal(again.units, small_block.units)
    assert again.manifest == small_block.manifest
    other = generate_block(
        100,
        design=test_design(1_000),
        vendor_key=VENDOR,
        operator_key="0123456789abcdeffedcba9876543210",
    )
    assert not np.array_equal(other.units, small_block.units)
    assert other.manifest.merkle_root != small_block.manifest.merkle_root


def test_the_block_identity_changes_the_block(small_block: Block) -> None:
    other = generate_block(
        100, design=test_design(1_000), vendor_key=VENDOR, operator_key=OPERATOR, block_number=2
    )
    assert not np.array_equal(other.lots_cents, small_block.lots_cents)


def test_without_keys_two_blocks_differ() -> None:
    one = generate_block(100, design=test_design(1_000))
    two = generate_block(100, design=test_design(1_000))
    assert one.manifest.merkle_root != two.manifest.merkle_root


def test_no_secret_in_the_manifest(small_block: Block) -> None:
    text = repr(small_block.manifest.as_json()).lower()
    assert VENDOR not in text
    assert OPERATOR not in text


def test_winning_combinations_lie_everywhere() -> None:
    block = generate_block(
        100, design=test_design(10_000), vendor_key=VENDOR, operator_key=OPERATOR
    )
    cells = winning_cells(block.units)
    # Every cell of the board is part of some winning combination somewhere.
    assert cells.any(axis=0).all()


def test_progress_is_reported() -> None:
    seen: list[str] = []
    generate_block(100, design=test_design(1_000), progress=lambda task, *_: seen.append(task))
    assert {"layout", "balance", "sale order", "self-verify and hashes"} <= set(seen)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"price_cents": 150}, ValueError, "stake must be 100, 200, 300 cents, got 150"),
        ({"emission": "E 1"}, ValueError, "emission id"),
        ({"block_number": 0}, ValueError, "block number"),
        ({"vendor_key": "zz" * 16, "operator_key": OPERATOR}, SeedKeyError, "hexadecimal"),
        ({"vendor_key": "00" * 4, "operator_key": OPERATOR}, SeedKeyError, "16 to 64 bytes"),
        ({"vendor_key": VENDOR}, SeedKeyError, "both"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], error: type, message: str) -> None:
    args: dict[str, object] = {"price_cents": 100, "design": test_design(1_000), **kwargs}
    price = args.pop("price_cents")
    with pytest.raises(error, match=message):
        generate_block(price, **args)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_real_block_holds_the_regulation_table(real_blocks: dict[int, object]) -> None:
    from pharaon.pool.blockfile import read_block

    for price, path in real_blocks.items():
        block = read_block(path)  # type: ignore[arg-type]
        assert block.size == 1_000_000
        assert not block.manifest.test
        found = Counter(block.lots_cents[block.lots_cents > 0].tolist())
        assert found == {t.amount_cents: t.lots for t in rules().prize_table(price)}


def test_a_block_that_fails_its_self_verification_is_never_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pharaon.pool import generate
    from pharaon.pool.balance import balance
    from pharaon.pool.layout import LaidOut

    def balance_then_break(laid: LaidOut, *, winning: np.ndarray, **kwargs: Any) -> None:
        balance(laid, winning=winning, **kwargs)
        losing = np.flatnonzero(~winning)[0]
        laid.units[losing, 0:4] = 4  # a chacal line the layout did not plan

    monkeypatch.setattr(generate, "balance", balance_then_break)
    with pytest.raises(generate.SelfVerificationError, match="prize table"):
        generate_block(100, design=test_design(1_000))
