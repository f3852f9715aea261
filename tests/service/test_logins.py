"""The lock-out of log-ins (service/logins.py), on both databases: an account counts each
attempt before its password is checked and is locked out for a while at the attempt past its
most; an address counts its failures; a success clears the account's count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from pharaon.service import logins
from pharaon.service.errors import LockedOutError
from pharaon.store.tables import LoginFailure
from pharaon.store.transactions import Transactions

THROTTLE = logins.Throttle(per_account=3, per_address=4, lockout=timedelta(minutes=15))
T0 = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
ANA = logins.player_keys("ana@example.org", "10.0.0.1")


def _begin(db: Transactions, keys: logins.Keys, now: datetime) -> LockedOutError | None:
    return db.write(logins.begin, keys=keys, throttle=THROTTLE, now=now)


def _rows(db: Transactions) -> dict[str, tuple[int, datetime | None]]:
    return db.read(
        lambda connection: {
            key: (int(failures), until)
            for key, failures, until in connection.execute(
                select(LoginFailure.key, LoginFailure.failures, LoginFailure.locked_until)
            )
        }
    )


def test_the_keys_of_players_and_operators_never_meet() -> None:
    assert (ANA.account, ANA.address) == ("ana@example.org", "ip:10.0.0.1")
    assert logins.player_keys("ana@example.org", None) == logins.Keys("ana@example.org", None)
    assert logins.operator_keys("ana@example.org", "10.0.0.1") == logins.Keys(
        "operator ana@example.org", "operator ip:10.0.0.1"
    )
    assert logins.operator_keys("ana@example.org", None).address is None
    long = logins.player_keys("a" * 300, "f" * 300)
    assert (len(long.account), len(long.address or "")) == (254, 254)
    assert ANA.limits(THROTTLE) == {"ana@example.org": 3, "ip:10.0.0.1": 4}


def test_the_attempt_past_the_most_locks_the_account_out(db: Transactions) -> None:
    for n in range(3):  # each counted before its password is checked
        assert _begin(db, ANA, T0 + timedelta(seconds=n)) is None
    assert _rows(db)["ana@example.org"] == (3, None)
    refused = _begin(db, ANA, T0 + timedelta(minutes=1))
    assert isinstance(refused, LockedOutError)
    assert refused.code == "locked_out"
    assert refused.detail == "too many failed logins: try again after 2026-06-15T12:16:00+00:00"
    assert _rows(db)["ana@example.org"] == (0, T0 + timedelta(minutes=16))
    # Still locked out until then, and a refused attempt does not make it longer.
    late = _begin(db, ANA, T0 + timedelta(minutes=15, seconds=59))
    assert isinstance(late, LockedOutError)
    assert "12:16:00" in late.detail
    # The lock-out over, the count starts anew.
    assert _begin(db, ANA, T0 + timedelta(minutes=16)) is None
    assert _rows(db)["ana@example.org"] == (1, None)


def test_a_success_clears_the_account_s_count(db: Transactions) -> None:
    for _ in range(2):
        assert _begin(db, ANA, T0) is None
        db.write(logins.failed, keys=ANA)
    assert _begin(db, ANA, T0) is None
    db.write(logins.succeeded, keys=ANA)
    # Zero (whether the row is deleted or kept at zero).
    assert _rows(db).get("ana@example.org", (0, None)) == (0, None)
    assert _rows(db)["ip:10.0.0.1"] == (2, None)  # the address keeps its failures
    for _ in range(3):
        assert _begin(db, ANA, T0) is None
    assert isinstance(_begin(db, ANA, T0), LockedOutError)


def test_an_address_failing_across_accounts_is_locked_out(db: Transactions) -> None:
    """Credential stuffing: one address, many accounts, each under its own most."""
    for n in range(4):
        keys = logins.player_keys(f"p{n}@example.org", "10.0.0.1")
        assert _begin(db, keys, T0) is None
        db.write(logins.failed, keys=keys)
    assert _rows(db)["ip:10.0.0.1"] == (4, None)
    fresh = logins.player_keys("fresh@example.org", "10.0.0.1")
    refused = _begin(db, fresh, T0)
    assert isinstance(refused, LockedOutError)
    # Not counted against the fresh account, which another address may still use.
    assert _rows(db)["fresh@example.org"] == (0, None)
    assert _rows(db)["ip:10.0.0.1"] == (0, T0 + timedelta(minutes=15))
    assert _begin(db, logins.player_keys("fresh@example.org", "10.0.0.2"), T0) is None
    assert _rows(db)["fresh@example.org"] == (1, None)
    # Attempts begun before the lock-out fail during it: counted, but the count starts anew
    # once the lock-out is over.
    for n in range(4):
        db.write(logins.failed, keys=logins.player_keys(f"p{n}@example.org", "10.0.0.1"))
    assert _rows(db)["ip:10.0.0.1"] == (4, T0 + timedelta(minutes=15))
    for n in range(4):
        keys = logins.player_keys(f"q{n}@example.org", "10.0.0.1")
        assert _begin(db, keys, T0 + timedelta(minutes=15)) is None


def test_an_address_is_counted_only_once_a_failure_is_known(db: Transactions) -> None:
    """Many people behind one address may log in at the same moment: beginning counts only
    the account."""
    for n in range(10):
        assert _begin(db, logins.player_keys(f"p{n}@example.org", "10.0.0.1"), T0) is None
    assert _rows(db)["ip:10.0.0.1"] == (0, None)
    db.write(logins.failed, keys=logins.player_keys("p0@example.org", None))  # no address
    assert _rows(db)["ip:10.0.0.1"] == (0, None)


@pytest.mark.parametrize("player_first", [True, False])
def test_an_operator_s_count_is_not_a_player_s(db: Transactions, player_first: bool) -> None:
    operator = logins.operator_keys("ana@example.org", "10.0.0.1")
    first, second = (ANA, operator) if player_first else (operator, ANA)
    for _ in range(3):
        assert _begin(db, first, T0) is None
    assert isinstance(_begin(db, first, T0), LockedOutError)
    assert _begin(db, second, T0) is None
