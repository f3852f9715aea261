"""Where a block's randomness comes from: two secrets, HKDF-SHA256 (RFC 5869), sub-keys.

The vendor (who prints the block) and the operator (who sells it) each hold a secret key. All of
a block's randomness derives from both through HKDF, so neither alone can predict the layout or
the sale order. The same two keys and block identity give the same block, byte for byte. With no
keys, fresh secrets come from the OS (``secrets``) and are never written anywhere.

Sub-keys are separated by purpose (``layout``, ``fill``, ``order``) and bound to the block's
identity (game, emission, block number, price), so a key pair never makes two identical blocks.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pharaon.pool import _kernels
from pharaon.pool.keys import SeedKeyError, check_key
from pharaon.pool.streams import KeyStream

_SALT = b"pharaon/block-factory/v1"
_HASH_LEN = 32
_ORDER_DOMAIN = b"pharaon/sale-order/v2\x00"


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    """RFC 5869 §2.2: PRK = HMAC-SHA256(salt, IKM)."""
    return hmac.new(salt or bytes(_HASH_LEN), ikm, hashlib.sha256).digest()


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 §2.3: the first ``length`` bytes of T(1) ‖ T(2) ‖ …"""
    if not 0 < length <= 255 * _HASH_LEN:
        raise ValueError(f"HKDF output length must be 1..{255 * _HASH_LEN}, got {length}")
    out, block = b"", b""
    for counter in range(1, -(-length // _HASH_LEN) + 1):
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
    return out[:length]


@dataclass(frozen=True, slots=True, repr=False)
class BlockKeys:
    """The three sub-keys of one block (32 bytes each). ``repr`` hides them."""

    layout: bytes
    fill: bytes
    order: bytes

    def __repr__(self) -> str:
        return "BlockKeys(<secret>)"

    def stream(self, purpose: str) -> KeyStream:
        """The ChaCha20 stream of the ``layout`` or ``fill`` sub-key, of ``balance``, a key
        expanded from ``fill`` (cell content only, never the order), or of ``look``, a key
        expanded from ``layout`` (each unit's look)."""
        key = {
            "layout": self.layout,
            "fill": self.fill,
            "balance": hkdf_expand(self.fill, b"balance", _HASH_LEN),
            "look": hkdf_expand(self.layout, b"look", _HASH_LEN),
        }[purpose]
        return KeyStream(key)


def derive_keys(
    vendor_key: bytes | None,
    operator_key: bytes | None,
    *,
    context: str,
) -> BlockKeys:
    """The block's sub-keys from both keys and ``context`` (the block's identity).

    Both keys or neither: with neither, two fresh 32-byte secrets are drawn from the OS.
    """
    if (vendor_key is None) != (operator_key is None):
        raise SeedKeyError("give both the vendor and the operator key, or neither")
    if vendor_key is None or operator_key is None:
        vendor_key, operator_key = secrets.token_bytes(32), secrets.token_bytes(32)
    check_key(vendor_key, "vendor")
    check_key(operator_key, "operator")
    # Length-prefixed so that no two key pairs give the same input keying material.
    ikm = b"".join(len(k).to_bytes(2, "big") + k for k in (vendor_key, operator_key))
    prk = hkdf_extract(_SALT, ikm)
    where = context.encode("utf-8")
    return BlockKeys(
        layout=hkdf_expand(prk, b"layout\x00" + where, _HASH_LEN),
        fill=hkdf_expand(prk, b"fill\x00" + where, _HASH_LEN),
        order=hkdf_expand(prk, b"order\x00" + where, _HASH_LEN),
    )


def secure_permutation(order_key: bytes, n: int) -> NDArray[np.int64]:
    """(n,) int64: a uniform permutation of ``0..n-1`` from the order sub-key.

    A Fisher-Yates shuffle whose random indices come from the SHAKE-256 stream of the key (a
    cryptographic XOF, not a statistical generator), read as big-endian 32-bit words; each index
    is exactly uniform (Lemire's multiply-and-reject). A longer stream starts with the same
    bytes, so asking for more words when the first ones run out changes nothing before.
    """
    if not 0 <= n < 1 << 32:
        raise ValueError(f"a permutation of 0 to 2^32 - 1 elements, got {n}")
    out = np.empty(n, dtype=np.int64)
    count = n + n // 64 + 64  # about n² / 2^33 rejections in all are expected
    while True:
        stream = hashlib.shake_256(_ORDER_DOMAIN + order_key).digest(4 * count)
        if _kernels.shuffle(np.frombuffer(stream, dtype=">u4").astype(np.uint32), out) >= 0:
            return out
        count *= 2
