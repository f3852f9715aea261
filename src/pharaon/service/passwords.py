"""Passwords of players and operators: argon2id hashes, their length rule, and where a server
computes them.

Hashing and checking are slow on purpose and use no database: a caller does them before or
between its transactions, never inside one (a transaction open meanwhile would hold its locks
for the hash's time). A server runs them on :data:`HASHING`'s two threads: a rush of log-ins
then costs at most two 19 MiB buffers.

New hashes are made with the parameters in force, production's unless whoever holds the
settings chose others (:func:`use`, from ``PHARAON_PASSWORD_HASHING``); a hash made with any
parameters still checks, as argon2 writes its parameters in the hash.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Final, Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from pharaon.service.errors import InvalidError

MIN_LENGTH, MAX_LENGTH = 8, 256
HASHING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="argon2")

# The names of the parameter sets, as PHARAON_PASSWORD_HASHING gives them.
Hashing = Literal["production", "fast-insecure-for-tests"]
_HASHERS: Final[dict[Hashing, PasswordHasher]] = {
    # OWASP's argon2id setting (19 MiB, 2 passes): 64 MiB per log-in would crowd a server.
    "production": PasswordHasher(time_cost=2, memory_cost=19_456, parallelism=1),
    # The smallest argon2-cffi accepts (8 KiB, 1 pass): a test suite makes its thousands of
    # players in no time; a password hashed so is as good as unprotected.
    "fast-insecure-for-tests": PasswordHasher(time_cost=1, memory_cost=8, parallelism=1),
}
_in_force: Hashing = "production"


def use(hashing: Hashing) -> None:
    """Make new hashes, and check unknown accounts, with the parameter set ``hashing`` from
    now on, in the whole process: called once at start by whoever holds the settings."""
    global _in_force  # noqa: PLW0603 (the process's one choice, made at its start)
    _nobody(hashing)  # made now, not at the first unknown account's log-in
    _in_force = hashing


def in_force() -> Hashing:
    """The name of the parameter set new hashes are made with."""
    return _in_force


@cache
def _nobody(hashing: Hashing) -> str:
    """A hash of nobody's password made with ``hashing``'s parameters: an unknown account is
    checked against it, so that its check takes a real one's time."""
    return _HASHERS[hashing].hash("not a password anyone has")


def check_length(password: str) -> None:
    """:class:`InvalidError` unless ``password`` has 8 to 256 characters."""
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidError(
            f"password must be {MIN_LENGTH} to {MAX_LENGTH} characters, got {len(password)}"
        )


def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` (tens of milliseconds with production's parameters)."""
    return _HASHERS[_in_force].hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``, whatever parameters made it. With no
    hash (an unknown account) it takes the same time and answers False, so the answer's time
    does not tell which."""
    hashing = _in_force
    try:
        return (
            _HASHERS[hashing].verify(password_hash or _nobody(hashing), password)
            and password_hash is not None
        )
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether ``password_hash`` was made with other parameters than those in force."""
    return _HASHERS[_in_force].check_needs_rehash(password_hash)
