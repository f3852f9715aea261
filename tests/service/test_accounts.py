"""Players' accounts (service/accounts.py): sign-up for adults only, one account per email, and
log-in in its steps (counted and read, the password checked between transactions, the session
opened), on both databases."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from pharaon.service import accounts, logins, passwords, sessions
from pharaon.service.clock import utcnow
from pharaon.service.errors import (
    AccountClosedError,
    EmailTakenError,
    InvalidError,
    UnauthorizedError,
    UnderageError,
)
from pharaon.store.tables import Account, Player, SessionRow
from pharaon.store.transactions import Transactions
from tests.service.helpers import PASSWORD, log_in, password_hash

THROTTLE = logins.Throttle(per_account=3, per_address=20, lockout=timedelta(minutes=15))
NOON = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)


def _register(db: Transactions, email: str, hashed: str | None = None) -> accounts.Registered:
    return db.write(
        accounts.register,
        email=email,
        password_hash=hashed or password_hash(),
        birth_date=date(1990, 5, 17),
        now=utcnow(),
    )


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("  Ana.Lopez@Example.ORG ", "ana.lopez@example.org"),
        ("a+b@mail.example.co.uk", "a+b@mail.example.co.uk"),
    ],
)
def test_normalise_email(raw: str, normal: str) -> None:
    assert accounts.normalise_email(raw) == normal
    assert accounts.login_email(raw) == normal


@pytest.mark.parametrize(
    "bad",
    ["", "ana", "ana@", "@example.org", "ana@example", "a b@example.org", "a@b@example.org",
     "ana@example..org", "x" * 65 + "@example.org", "a@" + "b" * 250 + ".org"],
)  # fmt: skip
def test_an_address_that_is_no_email_is_refused(bad: str) -> None:
    with pytest.raises(InvalidError):
        accounts.normalise_email(bad)
    # At log-in it is the same answer as a wrong password.
    with pytest.raises(UnauthorizedError) as refused:
        accounts.login_email(bad)
    assert refused.value.detail == accounts.WRONG


def test_adults_only_from_their_18th_birthday() -> None:
    assert accounts.age_on(date(2008, 6, 15), date(2026, 6, 14)) == 17
    assert accounts.age_on(date(2008, 6, 15), date(2026, 6, 15)) == 18
    assert accounts.age_on(date(2008, 2, 29), date(2026, 2, 28)) == 17
    assert accounts.age_on(date(2008, 2, 29), date(2026, 3, 1)) == 18

    def sign_up(birth: date, password: str = PASSWORD, email: str = " Ana@Example.org") -> str:
        return accounts.check_sign_up(email=email, password=password, birth_date=birth, now=NOON)

    assert sign_up(date(2008, 6, 15)) == "ana@example.org"
    with pytest.raises(UnderageError) as refused:
        sign_up(date(2008, 6, 16))
    assert refused.value.code == "underage"
    for impossible in (date(2026, 6, 16), date(1899, 12, 31)):
        with pytest.raises(InvalidError):
            sign_up(impossible)
    with pytest.raises(InvalidError):
        sign_up(date(1990, 1, 1), password="7 chars")
    with pytest.raises(InvalidError):
        sign_up(date(1990, 1, 1), email="not an email")


def test_register_opens_an_empty_account_once_per_email(db: Transactions) -> None:
    ana = _register(db, "ana@example.org")
    assert ana.email == "ana@example.org"
    with pytest.raises(EmailTakenError) as taken:
        _register(db, "ana@example.org")
    assert taken.value.code == "email_taken"
    bob = _register(db, "bob@example.org")
    assert bob.player_id != ana.player_id
    rows = db.read(
        lambda connection: connection.execute(
            select(Player.id, Player.email, Account.kind, Account.balance_cents)
            .join(Account, Account.player_id == Player.id)
            .order_by(Player.id)
        ).all()
    )
    assert [tuple(r) for r in rows] == [
        (ana.player_id, "ana@example.org", "player", 0),
        (bob.player_id, "bob@example.org", "player", 0),
    ]
    assert db.read(accounts.password_hash, player_id=ana.player_id) == password_hash()


def test_a_log_in_opens_a_session_of_its_player(db: Transactions) -> None:
    ana = _register(db, "ana@example.org")
    new = log_in(db, " ANA@example.org", PASSWORD, client="10.0.0.1", throttle=THROTTLE, now=NOON)
    assert new.created_at == NOON
    [found] = db.read(sessions.look_up, requests=[new.token], now=NOON)
    assert isinstance(found, sessions.Found)
    assert found.holder == sessions.PlayerSession(
        sessions.token_digest(new.token), new.csrf_token, ana.player_id, "ana@example.org"
    )
    assert found.last_seen_at == NOON
    with pytest.raises(UnauthorizedError):
        log_in(db, "ana@example.org", "wrong password", client=None, throttle=THROTTLE, now=NOON)


def test_an_unknown_email_is_answered_as_a_wrong_password(db: Transactions) -> None:
    _register(db, "ana@example.org")
    attempt = db.write(
        accounts.begin_log_in, email="nobody@example.org", client=None, throttle=THROTTLE, now=NOON
    )
    assert isinstance(attempt, accounts.Attempt)
    assert (attempt.player_id, attempt.password_hash) == (None, None)
    assert not passwords.verify_password(attempt.password_hash, PASSWORD)
    with pytest.raises(UnauthorizedError) as refused:
        db.write(accounts.finish_log_in, attempt=attempt, now=NOON)
    assert refused.value.detail == accounts.WRONG


def test_a_closed_account_is_told_closed_only_to_its_password(db: Transactions) -> None:
    ana = _register(db, "ana@example.org")
    db.write(
        lambda session: session.execute(
            update(Player).where(Player.id == ana.player_id).values(closed_at=NOON)
        )
    )
    with pytest.raises(UnauthorizedError):
        log_in(db, "ana@example.org", "wrong password", client=None, throttle=THROTTLE, now=NOON)
    with pytest.raises(AccountClosedError) as refused:
        log_in(db, "ana@example.org", PASSWORD, client=None, throttle=THROTTLE, now=NOON)
    assert refused.value.fields == {"closed_at": NOON.isoformat()}
    assert (
        db.read(
            lambda connection: connection.execute(
                select(func.count()).select_from(SessionRow)
            ).scalar()
        )
        == 0
    )


def test_finish_log_in_gives_back_the_count_and_may_replace_the_hash(db: Transactions) -> None:
    ana = _register(db, "ana@example.org")
    attempt = db.write(
        accounts.begin_log_in, email="ana@example.org", client=None, throttle=THROTTLE, now=NOON
    )
    assert isinstance(attempt, accounts.Attempt)
    assert (attempt.player_id, attempt.password_hash) == (ana.player_id, password_hash())
    assert attempt.keys == logins.Keys("ana@example.org", None)
    # Two more counted, none given back: the next one would be locked out...
    for _ in range(2):
        db.write(
            accounts.begin_log_in,
            email="ana@example.org",
            client=None,
            throttle=THROTTLE,
            now=NOON,
        )
    db.write(accounts.finish_log_in, attempt=attempt, now=NOON, new_hash="rehashed")
    assert db.read(accounts.password_hash, player_id=ana.player_id) == "rehashed"
    # ...but the success cleared the count: three more may be checked.
    for _ in range(3):
        again = db.write(
            accounts.begin_log_in,
            email="ana@example.org",
            client=None,
            throttle=THROTTLE,
            now=NOON,
        )
        assert isinstance(again, accounts.Attempt)
        assert again.password_hash == "rehashed"
