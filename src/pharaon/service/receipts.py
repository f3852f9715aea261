"""A sale receipt: what the operator commits to at the moment of a sale, signed with its
Ed25519 key, so a player can later hold the play's proof against it (the same play, unit and
block) without trusting the server twice (docs/proofs.md, "Receipts").

The signed text is a few lines, each ``name value``, under a first line naming the format::

    pharaon/receipt/v2
    play_id 42
    block_id 3
    emission E1
    block_number 1
    price_cents 100
    serial 123456
    time 2026-12-06T01:02:03.456789+00:00
    merkle_root 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08

and the signature is Ed25519 over its UTF-8 bytes, in base64. Every line but the time names a
field of the play's proof by the proof's own name, and a proof is the receipt's sale only if it
says the same in each (:data:`PROOF_FIELDS`, :func:`disagreement`). A v1 receipt (lines ``play``,
``block``, ``serial``, ``time``, ``root``: no emission, block number or price) is still read.

The key is a 32-byte seed in the key folder (``receipts.key``, mode 0600, made at the first
start); its public half is published at ``GET /api/v1/receipts/key``. Every server must sign
with the same key: it is made once, by the first start, and copied with the key folder to the
other servers; a server without it sells without receipts (and says so at its start)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from pharaon.pool.keys import signing_seed

FORMAT = "pharaon/receipt/v2"
KEY_FILE = "receipts.key"
# The fields a receipt signs, in the order of its lines, each named as a play's proof names it.
_FIELDS = (
    "play_id",
    "block_id",
    "emission",
    "block_number",
    "price_cents",
    "serial",
    "time",
    "merkle_root",
)
# The rule of a proof held against its receipt: each of these fields the receipt signed, the
# proof must say the same (the time is the sale's, which no proof carries). The page's
# static/js/receipt.js mirrors it.
PROOF_FIELDS = tuple(name for name in _FIELDS if name != "time")
_INTEGERS = ("play_id", "block_id", "block_number", "price_cents", "serial")
# Each format's lines, in order, and the field each names; v1's, from before the block's
# emission, number and price were signed, are still read.
_LINES = {
    FORMAT: {name: name for name in _FIELDS},
    "pharaon/receipt/v1": {
        "play": "play_id",
        "block": "block_id",
        "serial": "serial",
        "time": "time",
        "root": "merkle_root",
    },
}


class ReceiptError(Exception):
    """A receipt that does not hold: malformed, or its signature is not the key's."""


@dataclass(frozen=True, slots=True)
class Receipt:
    text: str
    signature: str  # base64


@dataclass(frozen=True, slots=True)
class Sold:
    """What a receipt says of a sale, named as the play's proof names it; ``emission``,
    ``block_number`` and ``price_cents`` are None in a v1 receipt, which did not sign them."""

    play_id: int
    block_id: int
    emission: str | None
    block_number: int | None
    price_cents: int | None
    serial: int
    time: datetime
    merkle_root: str


class Signer:
    """The operator's receipt key."""

    def __init__(self, seed: bytes) -> None:
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        raw = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_key = base64.b64encode(raw).decode()

    def __repr__(self) -> str:
        return f"Signer(public_key={self.public_key})"

    def receipt(self, sold: Sold) -> Receipt:
        """The signed receipt of ``sold``, whose every field must be known."""
        values = {name: getattr(sold, name) for name in _FIELDS}
        if any(value is None for value in values.values()):
            raise ValueError(f"a receipt signs every field of the sale, got {sold}")
        values["time"] = sold.time.isoformat()
        text = FORMAT + "\n" + "".join(f"{name} {value}\n" for name, value in values.items())
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
    names = _LINES.get(lines[0])
    if names is None or lines[-1] != "" or len(lines) != len(names) + 2:
        raise ReceiptError(f"not a {' or '.join(_LINES)} receipt")
    said = dict(line.partition(" ")[::2] for line in lines[1:-1])
    if tuple(said) != tuple(names):
        raise ReceiptError(f"a {lines[0]} receipt's lines are {', '.join(names)}, in that order")
    values = {names[line]: value for line, value in said.items()}
    try:
        number = {name: int(values[name]) for name in _INTEGERS if name in values}
        return Sold(
            play_id=number["play_id"],
            block_id=number["block_id"],
            emission=values.get("emission"),
            block_number=number.get("block_number"),
            price_cents=number.get("price_cents"),
            serial=number["serial"],
            time=datetime.fromisoformat(values["time"]),
            merkle_root=values["merkle_root"],
        )
    except ValueError as exc:
        raise ReceiptError(f"a receipt's value is malformed: {exc}") from None


def disagreement(sold: Sold, proof: Mapping[str, Any]) -> str | None:
    """Where ``proof`` (a play's proof, as its JSON parses) is not the sale the receipt
    ``sold`` signed, in one line naming the first field of :data:`PROOF_FIELDS` that differs,
    the receipt's value and the proof's; None when the proof says the same in each (a v1
    receipt's missing fields are not compared)."""
    for name in PROOF_FIELDS:
        signed = getattr(sold, name)
        if signed is None:
            continue
        given = proof.get(name)
        if type(given) is not type(signed) or given != signed:  # the proof's 1.0 or true is not 1
            shown = "missing" if name not in proof else json.dumps(given)[:80]
            return f"the receipt signed {name} {json.dumps(signed)}, the proof says {shown}"
    return None
