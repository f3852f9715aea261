"""Cryptographic random streams: the ChaCha20 keystream (RFC 8439) of a 32-byte key.

Everything that decides a unit (its layout, its filler symbols, the balancing) draws its random
words from such a stream, keyed by an HKDF sub-key of the vendor's and operator's keys
(:mod:`pharaon.pool.seeding`). Unlike a statistical generator (PCG64's state can be worked out
from its outputs), seeing part of a keystream tells nothing about the rest: units sold reveal
nothing about units unsold. ChaCha20 is fast on every x86 and ARM CPU, with or without special
instructions (OpenSSL, through the ``cryptography`` package).

A stream is a key and a 96-bit nonce; :meth:`KeyStream.substream` gives the stream of another
nonce, so that chunks of a block drawn in parallel have streams of their own.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import NDArray

KEY_BYTES = 32
_NONCE_BITS = 96


class KeyStream:
    """The keystream of ChaCha20 under ``key`` and nonce ``nonce``, read as little-endian 64-bit
    words from its first byte on. ``repr`` hides the key."""

    def __init__(self, key: bytes, nonce: int = 0) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a stream key must be {KEY_BYTES} bytes, got {len(key)}")
        if not 0 <= nonce < 1 << _NONCE_BITS:
            raise ValueError(f"a stream nonce must be 0 to 2^{_NONCE_BITS} - 1, got {nonce}")
        self._key = key
        self.nonce = nonce
        # cryptography's 16-byte ChaCha20 nonce: a 32-bit block counter, then RFC 8439's nonce.
        full = bytes(4) + nonce.to_bytes(_NONCE_BITS // 8, "little")
        self._cipher = Cipher(algorithms.ChaCha20(key, full), mode=None).encryptor()

    def __repr__(self) -> str:
        return f"KeyStream(<secret>, nonce={self.nonce})"

    def words(self, count: int) -> NDArray[np.uint64]:
        """(count,) uint64: the stream's next ``8 * count`` bytes (the keystream is ChaCha20's
        encryption of zeros)."""
        data = bytearray(self._cipher.update(bytes(8 * count)))
        return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)

    def substream(self, nonce: int) -> KeyStream:
        """The stream of the same key under another nonce, from its start."""
        return KeyStream(self._key, nonce)
