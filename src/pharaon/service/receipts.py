"""A sale receipt: what the operator commits to at the moment of a sale, signed with its
Ed25519 key, so a player can later hold the play's proof against it (the same unit, the same
block's root) without trusting the server twice (docs/proofs.md, "Receipts").

The signed text is a few lines, each ``name value``, under a first line naming the format::

    pharaon/receipt/v1
    play 42
    block 3
    serial 123456
    time 2026-12-06T01:02:03.456789+00:00
    root 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08

and the signature is Ed25519 over its UTF-8 bytes, in base64. The key is a 32-byte seed in the
key folder (``receipts.key``, mode 0600, made at the first start); its public half is
published at ``GET /api/v1/receipts/key``. Every server must sign with the same key: it is made
once, by the first start, and copied with the key folder to the other servers; a server
without it sells without receipts (and says so at its start)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from pharaon.pool.keys import signing_seed

FORMAT = "pharaon/receipt/v1"
KEY_FILE = "receipts.key"
_FIELDS = ("play", "block", "serial", "time", "root")


class ReceiptError(Exception):
    """A receipt that does not hold: malformed, or its signature is not the key's."""


@dataclass(frozen=True, slots=True)
class Receipt:
    text: str
    signature: str  # base64


@dataclass(frozen=True, slots=True)
class Sold:
    """What a receipt says of a sale."""

    play_id: int
    block_id: int
    serial: int
    time: datetime
    root: str


class Signer:
    """The operator's receipt key."""

    def __init__(self, seed: bytes) -> None:
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        raw = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()

    def __repr__(self) -> str:
        return f"Signer(public_key={self.public_key})"

    def receipt(self, sold: Sold) -> Receipt:
        text = (
            f"{FORMAT}\nplay {sold.play_id}\nblock {sold.block_id}\nserial {sold.serial}\n"
            f"time {sold.time.isoformat()}\nroot {sold.root}\n"
        )
        return Receipt(text, base64.b64encode(self._key.sign(text.encode())).decode())


def load(keys_dir: Path, *, create: bool = False) -> Signer | None:
    """The signer of ``keys_dir``'s receipt key; None if there is none, unless ``create``
    (the first start), which writes one first; :class:`SeedKeyError` if it cannot be read or
    made."""
    seed = signing_seed(keys_dir / KEY_FILE, "receipt", create=create)
    if seed is None:
        return None
    return Signer(seed)


def check(receipt: Receipt, public_key: str) -> Sold:
    """What ``receipt`` says, once its signature is found to be ``public_key``'s (base64 of the
    32 raw bytes); :class:`ReceiptError` if it is not, or the text is not a receipt."""
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key, validate=True))
        signature = base64.b64decode(receipt.signature, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ReceiptError(f"not a base64 Ed25519 key or signature: {exc}") from None
    try:
        key.verify(signature, receipt.text.encode())
    except InvalidSignature:
        raise ReceiptError("the signature is not the receipt key's: the receipt was changed, or "
                           "another key signed it") from None  # fmt: skip
    lines = receipt.text.split("\n")
    if lines[0] != FORMAT or lines[-1] != "" or len(lines) != len(_FIELDS) + 2:
        raise ReceiptError(f"not a {FORMAT} receipt")
    values = dict(line.partition(" ")[::2] for line in lines[1:-1])
    if tuple(values) != _FIELDS:
        raise ReceiptError(f"a receipt's lines are {', '.join(_FIELDS)}, in that order")
    try:
        return Sold(
            int(values["play"]),
            int(values["block"]),
            int(values["serial"]),
            datetime.fromisoformat(values["time"]),
            values["root"],
        )
    except ValueError as exc:
        raise ReceiptError(f"a receipt's value is malformed: {exc}") from None
