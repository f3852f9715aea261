from __future__ import annotations

import numpy as np
import pytest

from pharaon.pool.keys import SeedKeyError, parse_key
from pharaon.pool.seeding import derive_keys, hkdf_expand, hkdf_extract, secure_permutation

V = bytes(range(16))
OP = bytes(range(100, 132))


def test_hkdf_matches_rfc_5869_test_case_1() -> None:
    prk = hkdf_extract(bytes(range(13)), bytes([0x0B] * 22))
    assert prk.hex() == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"
    okm = hkdf_expand(prk, bytes(range(0xF0, 0xFA)), 42)
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_hkdf_matches_rfc_5869_test_case_3_empty_salt_and_info() -> None:
    prk = hkdf_extract(b"", bytes([0x0B] * 22))
    okm = hkdf_expand(prk, b"", 42)
    assert okm.hex() == (
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
    )


def test_same_keys_same_sub_keys_and_purposes_are_separated() -> None:
    one = derive_keys(V, OP, context="a")
    two = derive_keys(V, OP, context="a")
    assert (one.layout, one.fill, one.order) == (two.layout, two.fill, two.order)
    assert len({one.layout, one.fill, one.order}) == 3


@pytest.mark.parametrize(
    ("vendor", "operator", "context"),
    [(bytes(16), OP, "a"), (V, bytes(32), "a"), (V, OP, "b")],
)
def test_each_key_and_the_context_change_every_sub_key(
    vendor: bytes, operator: bytes, context: str
) -> None:
    base = derive_keys(V, OP, context="a")
    other = derive_keys(vendor, operator, context=context)
    assert base.layout != other.layout
    assert base.fill != other.fill
    assert base.order != other.order


def test_swapping_the_two_keys_changes_the_result() -> None:
    key = bytes(range(16))
    other = bytes(range(1, 17))
    assert derive_keys(key, other, context="a").order != derive_keys(other, key, context="a").order


def test_without_keys_fresh_secrets_each_time() -> None:
    assert derive_keys(None, None, context="a").order != derive_keys(None, None, context="a").order


def test_one_key_alone_is_refused() -> None:
    with pytest.raises(SeedKeyError, match="both"):
        derive_keys(V, None, context="a")


def test_keys_hide_in_repr() -> None:
    keys = derive_keys(V, OP, context="a")
    assert keys.order.hex() not in repr(keys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("xyz", "hexadecimal"),
        ("abc", "hexadecimal"),
        ("00" * 8, "16 to 64 bytes"),
        ("00" * 65, "16 to 64 bytes"),
    ],
)
def test_malformed_keys(text: str, message: str) -> None:
    with pytest.raises(SeedKeyError, match=message):
        parse_key(text, "vendor")


def test_parse_key_accepts_hex_with_prefix_and_case() -> None:
    assert (
        parse_key("0x" + "0123456789ABCDEF" * 2, "operator") == bytes(range(0x01, 0x100, 0x22)) * 2
    )


def test_the_permutation_is_a_permutation_and_follows_the_key() -> None:
    one = secure_permutation(b"k" * 32, 10_000)
    assert np.array_equal(np.sort(one), np.arange(10_000))
    assert np.array_equal(one, secure_permutation(b"k" * 32, 10_000))
    assert not np.array_equal(one, secure_permutation(b"j" * 32, 10_000))


def test_the_permutation_moves_about_everything() -> None:
    order = secure_permutation(b"k" * 32, 100_000)
    assert (order == np.arange(100_000)).sum() < 10  # about 1 fixed point expected


def test_the_permutation_is_uniform_on_three_elements() -> None:
    from collections import Counter

    seen = Counter(
        tuple(secure_permutation(i.to_bytes(32, "big"), 3).tolist()) for i in range(6_000)
    )
    assert len(seen) == 6
    assert all(900 < count < 1100 for count in seen.values())  # 1000 expected, sd about 29
