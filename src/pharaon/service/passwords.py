"""Passwords of players and operators: argon2id hashes, their length rule, and where a server
computes them.

Hashing and checking are slow on purpose and use no database: a caller does them before or
between its transactions, never inside one (a transaction open meanwhile would hold its locks
for the hash's time). A server runs them on :data:`HASHING`'s two threads: a rush of log-ins
then costs at most two 19 MiB buffers.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from pharaon.service.errors import InvalidError

MIN_LENGTH, MAX_LENGTH = 8, 256
# OWASP's argon2id setting (19 MiB, 2 passes): 64 MiB per log-in would crowd a server.
_hasher = PasswordHasher(time_cost=2, memory_cost=19_456, parallelism=1)
_NOBODY = _hasher.hash("not a password anyone has")
HASHING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="argon2")


def check_length(password: str) -> None:
    """:class:`InvalidError` unless ``password`` has 8 to 256 characters."""
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidError(
            f"password must be {MIN_LENGTH} to {MAX_LENGTH} characters, got {len(password)}"
        )


def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` (tens of milliseconds)."""
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``. With no hash (an unknown account) it
    takes the same time and answers False, so the answer's time does not tell which."""
    try:
        return _hasher.verify(password_hash or _NOBODY, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether ``password_hash`` was made with older settings than today's."""
    return _hasher.check_needs_rehash(password_hash)
