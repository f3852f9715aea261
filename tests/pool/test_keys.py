from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from pharaon.pool.keys import SeedKeyError, commitment, new_key, read_key_file, write_key_file
from pharaon.pool.seeding import derive_keys, hkdf_expand
from pharaon.pool.streams import KeyStream


def test_a_new_key_file_is_the_owner_s_alone_and_reads_back(tmp_path: Path) -> None:
    key = new_key()
    path = tmp_path / "vendor.key"
    write_key_file(path, key)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_key_file(path, "vendor") == key
    assert len(key) == 32
    assert new_key() != key


def test_the_commitment_is_the_key_s_sha256() -> None:
    key = bytes(range(32))
    assert commitment(key) == hashlib.sha256(key).hexdigest()


def test_a_key_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "open.key"
    write_key_file(path, new_key())
    os.chmod(path, 0o644)
    with pytest.raises(SeedKeyError, match=r"can be read by others \(mode 0644\): chmod 600 it"):
        read_key_file(path, "operator")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not a key at all", "hexadecimal digits"),
        ("00" * 8, "16 to 64 bytes"),
        ("00" * 32, r"weak \(1 distinct byte values"),
        ("0f" * 32, r"weak \(1 distinct byte values"),
        ("0123456789abcd" * 4, r"weak \(7 distinct byte values"),
    ],
)
def test_a_bad_key_file_is_refused_without_showing_its_text(
    text: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.key"
    path.write_text(text)
    os.chmod(path, 0o600)
    with pytest.raises(SeedKeyError, match=message) as caught:
        read_key_file(path, "vendor")
    assert text not in str(caught.value)


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SeedKeyError, match=r"the vendor key file .*missing\.key does not exist"):
        read_key_file(tmp_path / "missing.key", "vendor")


def test_each_purpose_draws_from_the_chacha20_stream_of_its_sub_key() -> None:
    keys = derive_keys(b"v" * 32, b"o" * 32, context="a")
    layout = keys.stream("layout").words(16)
    assert np.array_equal(layout, KeyStream(keys.layout).words(16))
    balance = KeyStream(hkdf_expand(keys.fill, b"balance", 32)).words(16)
    assert np.array_equal(keys.stream("balance").words(16), balance)
    assert not np.array_equal(keys.stream("fill").words(16), layout)
