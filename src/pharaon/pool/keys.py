"""The vendor's and the operator's secret keys as files, and their public commitments.

A key file holds one key as hexadecimal text (32 bytes from ``secrets`` by `pharaon keys new`;
16 to 64 bytes are accepted), readable by its owner only (mode 0600). Keys are read from files,
never from the command line (argv shows in ``ps`` and in shell history) and never written to a
block file, a log or the database: a block's manifest carries each key's **commitment**, the
SHA-256 of its bytes, so whoever holds the key can later show it made the block.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path

NEW_KEY_BYTES = 32
KEY_BYTES_MIN = 16
KEY_BYTES_MAX = 64
# A key of fewer distinct byte values than this is refused as weak (all zero, one byte
# repeated, a short pattern): 16 bytes from ``secrets`` have fewer with odds below 1e-9.
KEY_DISTINCT_BYTES_MIN = 8


class SeedKeyError(ValueError):
    """A vendor or operator key that is not usable."""


def parse_key(text: str, who: str) -> bytes:
    """A key written in hex (a key file's text); ``who`` is 'vendor' or 'operator'. A weak key
    (see :data:`KEY_DISTINCT_BYTES_MIN`) is refused. Errors never repeat the text: it may be a
    key."""
    cleaned = text.strip().lower().removeprefix("0x")
    try:
        key = bytes.fromhex(cleaned)
    except ValueError:
        raise SeedKeyError(f"the {who} key must be hexadecimal digits") from None
    check_key(key, who)
    distinct = len(set(key))
    if distinct < KEY_DISTINCT_BYTES_MIN:
        raise SeedKeyError(
            f"the {who} key is weak ({distinct} distinct byte values, at least "
            f"{KEY_DISTINCT_BYTES_MIN} needed): make one with `pharaon keys new`"
        )
    return key


def check_key(key: bytes, who: str) -> None:
    """Raise :class:`SeedKeyError` unless ``key`` has an acceptable length."""
    if not KEY_BYTES_MIN <= len(key) <= KEY_BYTES_MAX:
        raise SeedKeyError(
            f"the {who} key must be {KEY_BYTES_MIN} to {KEY_BYTES_MAX} bytes "
            f"({2 * KEY_BYTES_MIN} to {2 * KEY_BYTES_MAX} hex digits), got {len(key)} bytes"
        )


def commitment(key: bytes) -> str:
    """The public commitment to ``key``: its SHA-256, in hex."""
    return hashlib.sha256(key).hexdigest()


def new_key() -> bytes:
    """A fresh key from the operating system's secure source."""
    return secrets.token_bytes(NEW_KEY_BYTES)


def write_key_file(path: Path, key: bytes) -> None:
    """Write ``key`` to a new file ``path``, mode 0600; raises :class:`SeedKeyError` if the
    file exists or cannot be written."""
    try:
        # O_EXCL: a key is never overwritten; the mode is set as the file is created.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SeedKeyError(f"{path} exists already: a key file is never overwritten") from None
    except OSError as exc:
        raise SeedKeyError(f"cannot write key file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key.hex() + "\n")


def read_key_file(path: Path, who: str) -> bytes:
    """The key in file ``path`` (``who``: vendor or operator); raises :class:`SeedKeyError`
    with one line if it is missing, readable by others, or not a key."""
    where = f"the {who} key file {path}"
    try:
        _check_private(path, where)
        text = path.read_text("ascii")
    except FileNotFoundError:
        raise SeedKeyError(f"{where} does not exist") from None
    except OSError as exc:
        raise SeedKeyError(f"cannot read {where}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SeedKeyError(f"{where} does not hold hexadecimal text") from None
    try:
        return parse_key(text, who)
    except SeedKeyError as exc:
        raise SeedKeyError(f"{where}: {exc}") from None


def signing_seed(path: Path, who: str, *, create: bool = False) -> bytes | None:
    """The 32-byte Ed25519 seed in key file ``path`` (``who``: receipt, checkpoint); None if
    there is none, unless ``create`` (a first start), which writes a new one first (its folder
    made private); raises :class:`SeedKeyError` with one line if it cannot be read or made."""
    if not path.exists() and not create:
        return None
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            write_key_file(path, new_key())
        except SeedKeyError:
            if not path.exists():  # else another server's first start wrote it meanwhile
                raise
    seed = read_key_file(path, who)
    if len(seed) != 32:
        raise SeedKeyError(f"the {who} key file {path} must hold 32 bytes, got {len(seed)}")
    return seed


def _check_private(path: Path, where: str) -> None:
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise SeedKeyError(f"{where} is not a regular file")
    if mode & 0o077:
        raise SeedKeyError(
            f"{where} can be read by others (mode {stat.S_IMODE(mode):04o}): chmod 600 it"
        )


def check_key_folder(folder: Path) -> None:
    """Raise :class:`SeedKeyError` with one line if a key file (``*.key``) in ``folder`` is
    not a regular file its owner alone can read; a folder not there yet holds none."""
    try:
        paths = sorted(folder.glob("*.key"))
        for path in paths:
            _check_private(path, f"the key file {path}")
    except OSError as exc:
        raise SeedKeyError(f"cannot read the key folder {folder}: {exc.strerror}") from None
