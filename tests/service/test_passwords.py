"""Passwords (service/passwords.py): the length rule, argon2id hashes checked, an unknown
account's check failing like a wrong password, older settings found for a rehash, the
hashing done on its own two threads, and the parameter sets (production's, the test suite's)
chosen by PHARAON_PASSWORD_HASHING. No database: hashing never runs in a transaction."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Final, Literal, get_args

import pytest
from argon2 import PasswordHasher, Type, extract_parameters

from pharaon.service import passwords
from pharaon.service.errors import InvalidError
from pharaon.settings import Settings
from tests.service.helpers import PASSWORD, password_hash

FAST: Final = "fast-insecure-for-tests"
# (type, memory in KiB, passes, lanes) of each set's new hashes.
PARAMETERS = {"production": (Type.ID, 19_456, 2, 1), FAST: (Type.ID, 8, 1, 1)}


@pytest.fixture(autouse=True)
def _production() -> Iterator[None]:
    """Production's parameters in force for each test; then those found before (the suite
    may run with the fast ones)."""
    found = passwords.in_force()
    passwords.use("production")
    yield
    passwords.use(found)


def _parameters(password_hash: str) -> tuple[Type, int, int, int]:
    made = extract_parameters(password_hash)
    return made.type, made.memory_cost, made.time_cost, made.parallelism


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


def test_the_setting_is_production_unless_the_environment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PHARAON_PASSWORD_HASHING", raising=False)
    assert Settings().password_hashing == "production"
    monkeypatch.setenv("PHARAON_PASSWORD_HASHING", FAST)
    assert Settings().password_hashing == FAST
    # Every value the setting takes is a parameter set of the module's.
    annotation = Settings.model_fields["password_hashing"].annotation
    assert set(get_args(annotation)) == set(get_args(passwords.Hashing)) == set(PARAMETERS)


def test_the_default_setting_hashes_with_production_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PHARAON_PASSWORD_HASHING", raising=False)
    passwords.use(FAST)
    passwords.use(Settings().password_hashing)
    assert passwords.in_force() == "production"
    assert _parameters(passwords.hash_password(PASSWORD)) == (Type.ID, 19_456, 2, 1)


def test_the_fast_setting_hashes_with_the_smallest_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PHARAON_PASSWORD_HASHING", FAST)
    passwords.use(Settings().password_hashing)
    assert passwords.in_force() == FAST
    hashed = passwords.hash_password(PASSWORD)
    assert _parameters(hashed) == (Type.ID, 8, 1, 1)
    assert passwords.verify_password(hashed, PASSWORD)
    assert not passwords.verify_password(hashed, PASSWORD + " ")


def test_a_process_told_nothing_hashes_with_production_parameters() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PHARAON_PASSWORD_HASHING"}
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pharaon.service import passwords\n"
            "print(passwords.in_force(), passwords.hash_password('long enough'))",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert made[0] == "production"
    assert _parameters(made[1]) == (Type.ID, 19_456, 2, 1)


@pytest.mark.parametrize(
    ("made_with", "checked_with"), [("production", FAST), (FAST, "production")]
)
def test_a_hash_made_with_one_set_checks_under_the_other_and_asks_for_a_rehash(
    made_with: passwords.Hashing, checked_with: passwords.Hashing
) -> None:
    passwords.use(made_with)
    hashed = passwords.hash_password(PASSWORD)
    assert not passwords.needs_rehash(hashed)
    passwords.use(checked_with)
    assert _parameters(hashed) == PARAMETERS[made_with]
    assert passwords.verify_password(hashed, PASSWORD)
    assert not passwords.verify_password(hashed, PASSWORD.upper())
    assert passwords.needs_rehash(hashed)
    assert _parameters(passwords.hash_password(PASSWORD)) == PARAMETERS[checked_with]


@pytest.mark.parametrize("hashing", ["production", FAST])
def test_an_unknown_account_is_checked_against_a_hash_of_the_parameters_in_force(
    hashing: passwords.Hashing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So that its check takes as long as a known account's, in either set."""
    passwords.use(FAST if hashing == "production" else "production")  # the other set first
    passwords.use(hashing)
    checked: list[str] = []
    verify = PasswordHasher.verify

    def spy(self: PasswordHasher, encoded: str | bytes, password: str | bytes) -> Literal[True]:
        checked.append(str(encoded))
        return verify(self, encoded, password)

    monkeypatch.setattr(PasswordHasher, "verify", spy)
    assert not passwords.verify_password(None, PASSWORD)
    assert [_parameters(h) for h in checked] == [PARAMETERS[hashing]]
