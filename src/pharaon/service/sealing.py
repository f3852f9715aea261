"""Operators' TOTP secrets sealed at rest with AES-GCM, under a key file of the server.

A TOTP code is checked against the shared secret itself (RFC 6238), so the secret cannot be
hashed like a password; it is kept encrypted instead. The key is 32 random bytes in
``<keys_dir>/totp.key`` (hexadecimal, mode 0600, created with O_EXCL when the first operator
is added, as the block keys of :mod:`pharaon.pool.keys`); it never goes to the database. A
sealed value is ``aesgcm:`` and the URL-safe base64 of nonce (12 bytes), ciphertext and tag,
with the operator's email as associated data (a sealed secret copied to another row does not
open).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pharaon.pool.keys import SeedKeyError, new_key, read_key_file, write_key_file
from pharaon.service.errors import ServiceError

PREFIX = "aesgcm:"
KEY_FILE = "totp.key"
_NONCE_BYTES = 12


class SealingError(ServiceError):
    """The server's key file does not open a sealed secret, or cannot be read: a setup fault,
    not the request's."""

    code = "misconfigured"


@dataclass(frozen=True, slots=True)
class Sealer:
    """Seals and opens secrets with the key of ``path``."""

    key: bytes
    path: Path

    def seal(self, secret: str, *, email: str) -> str:
        """``secret`` encrypted for the row of operator ``email``."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = AESGCM(self.key).encrypt(nonce, secret.encode("ascii"), _aad(email))
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, stored: str, *, email: str) -> str:
        """The secret sealed in ``stored``."""
        try:
            if not stored.startswith(PREFIX):
                raise ValueError("not sealed")
            raw = base64.urlsafe_b64decode(stored[len(PREFIX) :].encode("ascii"))
            opened = AESGCM(self.key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _aad(email))
        except (InvalidTag, binascii.Error, ValueError):
            raise SealingError(
                f"the TOTP secret of operator {email} does not open with the key file "
                f"{self.path}: is it the key file this database was sealed with?"
            ) from None
        return opened.decode("ascii")


def _aad(email: str) -> bytes:
    return f"pharaon totp {email}".encode()


def load(keys_dir: Path, *, create: bool = False) -> Sealer:
    """The sealer of ``keys_dir``'s key file, written first if there is none yet and
    ``create`` (an operator being added); a key file that is missing, unreadable, open to
    others or not a 32-byte key is a :class:`SealingError`."""
    path = keys_dir / KEY_FILE
    try:
        if not path.exists() and not create:
            raise SealingError(
                f"no TOTP key file {path}: is PHARAON_KEYS_DIR the folder the operators were "
                "added with?"
            )
        if not path.exists():
            keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                write_key_file(path, new_key())
            except SeedKeyError:
                if not path.exists():  # else another process wrote it first: read that one
                    raise
        key = read_key_file(path, "TOTP")
    except (SeedKeyError, OSError) as exc:
        raise SealingError(str(exc)) from None
    if len(key) != 32:
        raise SealingError(f"the TOTP key file {path} must hold 32 bytes, got {len(key)}")
    return Sealer(key, path)
