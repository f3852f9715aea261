"""Passwords (service/passwords.py): the length rule, argon2id hashes checked, an unknown
account's check failing like a wrong password, older settings found for a rehash, and the
hashing done on its own two threads. No database: hashing never runs in a transaction."""

from __future__ import annotations

import threading

import pytest
from argon2 import PasswordHasher

from pharaon.service import passwords
from pharaon.service.errors import InvalidError
from tests.service.helpers import PASSWORD, password_hash


@pytest.mark.parametrize("length", [0, 7, 257, 1_000])
def test_a_password_too_short_or_too_long_is_refused(length: int) -> None:
    with pytest.raises(InvalidError) as refused:
        passwords.check_length("p" * length)
    assert refused.value.detail == f"password must be 8 to 256 characters, got {length}"


def test_eight_to_256_characters_are_accepted() -> None:
    for length in (8, 9, 255, 256):
        passwords.check_length("p" * length)
    passwords.check_length("é" * 8)  # characters, not bytes


def test_a_hash_checks_its_password_only() -> None:
    hashed = password_hash()
    assert hashed.startswith("$argon2id$")
    assert PASSWORD not in hashed
    assert passwords.verify_password(hashed, PASSWORD)
    assert not passwords.verify_password(hashed, PASSWORD + " ")
    assert not passwords.verify_password(hashed, PASSWORD.upper())
    assert not passwords.verify_password(hashed, "")
    assert not passwords.verify_password("not a hash", PASSWORD)  # a damaged row: refused


def test_no_account_is_checked_as_a_wrong_password() -> None:
    """No hash (an unknown email): False, after checking against a hash of nobody's, so it
    takes the time of a real check."""
    assert not passwords.verify_password(None, PASSWORD)
    assert not passwords.verify_password(None, "not a password anyone has")


def test_a_hash_of_older_settings_still_checks_and_asks_for_a_rehash() -> None:
    older = PasswordHasher(time_cost=1, memory_cost=8_192, parallelism=1).hash(PASSWORD)
    assert passwords.verify_password(older, PASSWORD)
    assert passwords.needs_rehash(older)
    assert not passwords.needs_rehash(password_hash())
    fresh = passwords.hash_password(PASSWORD)
    assert fresh != password_hash()  # salted: two hashes of one password differ
    assert not passwords.needs_rehash(fresh)
    assert passwords.verify_password(fresh, PASSWORD)


def test_the_server_hashes_on_two_threads_of_its_own() -> None:
    def check() -> tuple[str, bool]:
        return threading.current_thread().name, passwords.verify_password(password_hash(), PASSWORD)

    outcomes = [f.result() for f in [passwords.HASHING.submit(check) for _ in range(6)]]
    assert all(ok for _, ok in outcomes)
    names = {name for name, _ in outcomes}
    assert all(name.startswith("argon2") for name in names)
    assert 1 <= len(names) <= 2
