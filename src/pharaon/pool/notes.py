"""Signed checkpoints of a transparency log: the C2SP formats, as pure functions.

- **checkpoint** (c2sp.org/tlog-checkpoint): the note text ``<origin>\\n<size>\\n<base64
  root>\\n``;
- **signed note** (c2sp.org/signed-note): the text, a blank line, then one line per signature,
  ``— <key name> <base64(key id ‖ signature)>\\n``; an Ed25519 key's id is the first 4 bytes of
  ``SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)`` and it signs the text;
- **cosignature** (c2sp.org/tlog-cosignature, ``cosignature/v1``): a witness's signature line
  whose key id is ``SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]`` and whose signature is
  ``timestamp (u64 BE) ‖ Ed25519 over "cosignature/v1\\ntime <timestamp>\\n" ‖ text``;
- **verifier key** (a "vkey"): ``<name>+<key id, 8 hex digits>+<base64(type ‖ public key)>``.

docs/proofs.md says each byte by byte, with test vectors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ED25519: Final = 0x01  # a note signature
COSIGNATURE_V1: Final = 0x04  # a witness's timestamped cosignature
DASH: Final = "\u2014"  # the em dash that starts a signature line
MAX_SIGNATURES: Final = 32
MAX_NOTE_BYTES: Final = 8192
_NAME = re.compile(r"[^\s+]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")


class NoteError(ValueError):
    """A note, key or checkpoint that is malformed, or whose signature does not hold."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise NoteError(f"{what} is not base64") from None


def check_name(name: str) -> str:
    """``name`` if it can name a key (non-empty, no space, no ``+``); else :class:`NoteError`."""
    if not _NAME.fullmatch(name) or not name.isprintable():
        raise NoteError(f"a key name must be non-empty, without spaces or '+', got {name!r}")
    return name


def key_id(name: str, kind: int, public_key: bytes) -> bytes:
    """The 4-byte id of key ``public_key`` of type ``kind`` named ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public_key).digest()[:4]


@dataclass(frozen=True, slots=True)
class Verifier:
    """A public key that may sign notes: Ed25519 (``kind`` 0x01) or a witness's cosignatures
    (0x04)."""

    name: str
    kind: int
    public_key: bytes  # 32 raw bytes

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.kind, self.public_key)

    @property
    def vkey(self) -> str:
        """This key written as a verifier key."""
        return f"{self.name}+{self.key_id.hex()}+{_b64(bytes([self.kind]) + self.public_key)}"

    def _verify(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True


def parse_vkey(text: str) -> Verifier:
    """The verifier key written ``name+keyid+base64(type ‖ key)``; :class:`NoteError` if it is
    not one, names another key id, or is of a type other than Ed25519 or cosignature/v1."""
    name, plus, rest = text.strip().partition("+")
    hex_id, plus2, data = rest.partition("+")
    if not (plus and plus2):
        raise NoteError("a verifier key is name+keyid+base64 key")
    check_name(name)
    raw = _unb64(data, "a verifier key's key")
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE_V1):
        raise NoteError("a verifier key must be an Ed25519 (0x01) or cosignature/v1 (0x04) key")
    verifier = Verifier(name, raw[0], raw[1:])
    if hex_id.lower() != verifier.key_id.hex() or len(hex_id) != 8:
        raise NoteError(f"the verifier key of {name} says key id {hex_id!r}, its key gives "
                        f"{verifier.key_id.hex()}")  # fmt: skip
    return verifier


class Signer:
    """An Ed25519 private key (its 32-byte seed) signing notes under ``name``; ``kind`` says
    whether its lines are plain note signatures (0x01) or cosignatures (0x04)."""

    def __init__(self, name: str, seed: bytes, kind: int = ED25519) -> None:
        if len(seed) != 32:
            raise NoteError(f"an Ed25519 seed is 32 bytes, got {len(seed)}")
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.verifier = Verifier(check_name(name), kind, public)

    def __repr__(self) -> str:
        return f"Signer({self.verifier.vkey})"

    def sign(self, text: str) -> str:
        """The note signature line of ``text`` (0x01 keys)."""
        if self.verifier.kind != ED25519:
            raise NoteError("a cosigner's key signs cosignatures: use cosign")
        signature = self._key.sign(_text_bytes(text))
        return f"{DASH} {self.verifier.name} {_b64(self.verifier.key_id + signature)}\n"

    def cosign(self, text: str, timestamp: int) -> str:
        """The cosignature/v1 line of the checkpoint ``text`` at ``timestamp`` (POSIX seconds)."""
        if self.verifier.kind != COSIGNATURE_V1:
            raise NoteError("a note key signs notes: use sign")
        if not 0 <= timestamp < 1 << 63:
            raise NoteError(f"a cosignature's timestamp must be 0..2^63-1, got {timestamp}")
        signature = self._key.sign(cosigned_message(text, timestamp))
        blob = self.verifier.key_id + timestamp.to_bytes(8, "big") + signature
        return f"{DASH} {self.verifier.name} {_b64(blob)}\n"


def cosigned_message(text: str, timestamp: int) -> bytes:
    """What a cosignature/v1 signs: two lines, then the checkpoint's text."""
    return f"cosignature/v1\ntime {timestamp}\n".encode() + _text_bytes(text)


def _text_bytes(text: str) -> bytes:
    if not text.endswith("\n"):
        raise NoteError("a note's text ends with a newline")
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("a note holds no control characters but newlines")
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class Signature:
    """One signature line: the key's name and id, and what follows the id."""

    name: str
    key_id: bytes
    signature: bytes  # Ed25519: 64 bytes; cosignature/v1: timestamp (8) ‖ 64

    @property
    def line(self) -> str:
        return f"{DASH} {self.name} {_b64(self.key_id + self.signature)}\n"

    @property
    def timestamp(self) -> int | None:
        """A cosignature's time (POSIX seconds); None for a plain signature."""
        return int.from_bytes(self.signature[:8], "big") if len(self.signature) == 72 else None


@dataclass(frozen=True, slots=True)
class Note:
    text: str  # ends with a newline
    signatures: tuple[Signature, ...]

    def __str__(self) -> str:
        return self.text + "\n" + "".join(s.line for s in self.signatures)

    def signed_by(self, verifier: Verifier) -> bool:
        """Whether a line names ``verifier`` (its name and key id), holding or not."""
        return any((s.name, s.key_id) == (verifier.name, verifier.key_id) for s in self.signatures)

    def with_signatures(self, lines: str) -> Note:
        """This note with the signature lines ``lines`` added (the same line once)."""
        more = parse(self.text + "\n" + lines).signatures
        return Note(self.text, tuple(dict.fromkeys([*self.signatures, *more])))


def parse(note: str) -> Note:
    """The note's text and signature lines (not yet verified); :class:`NoteError` if ``note``
    is not a signed note."""
    if len(note.encode("utf-8")) > MAX_NOTE_BYTES:
        raise NoteError(f"a note is at most {MAX_NOTE_BYTES} bytes")
    text, sep, block = note.rpartition("\n\n")
    if not sep or not block.endswith("\n"):
        raise NoteError("a signed note is its text, a blank line, then signature lines")
    text += "\n"
    _text_bytes(text)
    signatures = []
    for line in block[:-1].split("\n"):
        dash, name, encoded = [*line.split(" "), "", ""][:3]
        if dash != DASH or line.count(" ") != 2:
            raise NoteError(f"not a signature line: {line[:80]!r}")
        check_name(name)
        blob = _unb64(encoded, "a signature")
        if len(blob) < 5:
            raise NoteError("a signature is a key id and at least one byte")
        signatures.append(Signature(name, blob[:4], blob[4:]))
    if len(signatures) > MAX_SIGNATURES:
        raise NoteError(f"a note has at most {MAX_SIGNATURES} signatures")
    return Note(text, tuple(signatures))


def verify(note: Note, verifier: Verifier) -> Signature:
    """The signature of ``verifier`` on ``note``, once it holds; :class:`NoteError` if the note
    has none or it does not hold."""
    for s in note.signatures:
        if (s.name, s.key_id) != (verifier.name, verifier.key_id):
            continue
        if verifier.kind == ED25519:
            good = len(s.signature) == 64 and verifier._verify(s.signature, _text_bytes(note.text))
        else:
            stamp = s.timestamp
            good = stamp is not None and verifier._verify(
                s.signature[8:], cosigned_message(note.text, stamp)
            )
        if not good:
            raise NoteError(f"the signature of {verifier.name} does not hold: the note was "
                            "changed, or another key signed it")  # fmt: skip
        return s
    raise NoteError(f"the note is not signed by {verifier.name} (key id {verifier.key_id.hex()})")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A log's size and root hash, as a checkpoint note's text says them."""

    origin: str
    size: int
    root: bytes  # 32 bytes

    @property
    def text(self) -> str:
        return f"{self.origin}\n{self.size}\n{_b64(self.root)}\n"


def parse_checkpoint(text: str) -> Checkpoint:
    """The checkpoint a note's text says; :class:`NoteError` if it is not one (extension
    lines are refused: this log writes none)."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise NoteError("a checkpoint is three lines: origin, tree size, base64 root hash")
    origin, size, root_b64 = lines[:3]
    if not origin or not origin.isprintable():
        raise NoteError("a checkpoint's origin line is empty or not printable")
    if not _DECIMAL.fullmatch(size):
        raise NoteError(f"a checkpoint's tree size is a decimal number, got {size[:30]!r}")
    root = _unb64(root_b64, "a checkpoint's root hash")
    if len(root) != 32:
        raise NoteError(f"a checkpoint's root hash is 32 bytes, got {len(root)}")
    return Checkpoint(origin, int(size), root)


def split_notes(text: str) -> list[str]:
    """The signed notes one after the other in ``text`` (as a file keeps them, with blank lines
    between them or not)."""
    notes: list[str] = []
    current: list[str] = []
    signed = False  # in the signature lines of the current note
    for line in text.splitlines(keepends=True):
        is_signature = line.startswith(DASH + " ")
        if signed and not is_signature:
            notes.append("".join(current))
            current, signed = [], False
        if not current and not line.strip():
            continue  # blank lines between notes
        current.append(line)
        signed = is_signature and (signed or (len(current) > 1 and current[-2] == "\n"))
    if current:
        notes.append("".join(current))
    return notes
