from __future__ import annotations

import numpy as np
import pytest

from pharaon.pool.streams import KeyStream

# RFC 8439 §2.4.2's key, whose keystream block 1 under this nonce is given in §2.3.2.
RFC_KEY = bytes(range(32))
RFC_NONCE = int.from_bytes(bytes.fromhex("000000090000004a00000000"), "little")
RFC_BLOCK_1 = bytes.fromhex(
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
)


def test_the_stream_is_rfc_8439_chacha20() -> None:
    stream = KeyStream(RFC_KEY, RFC_NONCE)
    stream.words(8)  # block 0 (the RFC's example starts at block counter 1)
    assert stream.words(8).astype("<u8").tobytes() == RFC_BLOCK_1


def test_reading_in_pieces_reads_the_same_stream() -> None:
    whole = KeyStream(RFC_KEY, 5).words(1000)
    stream = KeyStream(RFC_KEY, 5)
    pieces = np.concatenate([stream.words(n) for n in (1, 7, 8, 100, 884)])
    assert np.array_equal(whole, pieces)


def test_substreams_and_keys_give_other_words() -> None:
    first = KeyStream(RFC_KEY).words(64)
    assert np.array_equal(KeyStream(RFC_KEY).substream(0).words(64), first)
    assert not np.array_equal(KeyStream(RFC_KEY).substream(1).words(64), first)
    other_key = bytes([1]) + RFC_KEY[1:]
    assert not np.array_equal(KeyStream(other_key).words(64), first)


def test_the_words_look_uniform() -> None:
    bits = np.unpackbits(KeyStream(RFC_KEY).words(1 << 14).view(np.uint8))
    # 2^20 bits: the share of ones is 1/2 within 5 standard deviations (0.0024).
    assert abs(bits.mean() - 0.5) < 0.0025


def test_a_bad_key_or_nonce_is_refused_and_the_key_never_shown() -> None:
    with pytest.raises(ValueError, match="must be 32 bytes, got 16"):
        KeyStream(bytes(16))
    with pytest.raises(ValueError, match="nonce must be 0 to 2"):
        KeyStream(RFC_KEY, 1 << 96)
    assert RFC_KEY.hex() not in repr(KeyStream(RFC_KEY))
