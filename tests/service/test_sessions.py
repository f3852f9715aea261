"""Log-in sessions (service/sessions.py), on both databases: a token found by its SHA-256 only,
its last request written at most every 30 seconds, the session deleted once idle too long, the
CSRF token checked, and log-outs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, insert, select
from sqlalchemy.orm import Session

from pharaon.service import sessions
from pharaon.service.errors import ForbiddenError, UnauthorizedError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import Operator, SessionRow
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player

T0 = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
IDLE = timedelta(minutes=30)


def _open(db: Transactions, player_id: int, now: datetime = T0) -> sessions.NewSession:
    return db.write(lambda session: sessions.create(session, player_id=player_id, now=now))


def _look_up(db: Transactions, *tokens: str) -> list[sessions.Found | UnauthorizedError]:
    return db.read(sessions.look_up, requests=list(tokens), now=T0)


def _found(db: Transactions, token: str) -> sessions.Found:
    [found] = _look_up(db, token)
    assert isinstance(found, sessions.Found), found
    return found


def _count(db: Transactions) -> int:
    return db.read(
        lambda connection: int(
            connection.execute(select(func.count()).select_from(SessionRow)).scalar_one()
        )
    )


def test_tokens_are_found_by_their_digest_in_the_requests_order(
    engine: Engine, db: Transactions
) -> None:
    sessions_ = make_sessionmaker(engine)
    ana, bob = funded_player(sessions_, "ana", 0), funded_player(sessions_, "bob", 0)
    mine, theirs = _open(db, ana), _open(db, bob, T0 + timedelta(seconds=5))
    assert mine.token != theirs.token
    assert mine.csrf_token != mine.token
    found = _look_up(db, theirs.token, "no such token", mine.token, theirs.token)
    assert [type(f) for f in found] == [
        sessions.Found,
        UnauthorizedError,
        sessions.Found,
        sessions.Found,
    ]
    assert (
        found[0]
        == found[3]
        == sessions.Found(
            sessions.PlayerSession(
                sessions.token_digest(theirs.token), theirs.csrf_token, bob, "bob@example.org"
            ),
            T0 + timedelta(seconds=5),
        )
    )
    assert found[2] == sessions.Found(
        sessions.PlayerSession(
            sessions.token_digest(mine.token), mine.csrf_token, ana, "ana@example.org"
        ),
        T0,
    )
    # Only the token's SHA-256 is stored.
    stored = db.read(
        lambda connection: set(connection.execute(select(SessionRow.token_sha256)).scalars())
    )
    assert stored == {sessions.token_digest(mine.token), sessions.token_digest(theirs.token)}
    assert mine.token not in stored


def test_an_operator_s_session_holds_its_role(db: Transactions) -> None:
    operator_id = db.write(
        lambda session: session.execute(
            insert(Operator)
            .values(
                email="boss@example.org",
                password_hash="x",
                totp_secret="x",
                role="analyst",
                created_at=T0,
            )
            .returning(Operator.id)
        ).scalar_one()
    )
    new = db.write(lambda session: sessions.create(session, operator_id=operator_id, now=T0))
    holder = _found(db, new.token).holder
    assert holder == sessions.OperatorSession(
        sessions.token_digest(new.token), new.csrf_token, operator_id, "boss@example.org", "analyst"
    )
    assert isinstance(holder, sessions.OperatorSession)
    assert holder.actor == "operator:boss@example.org"


def test_what_is_due_after_a_stretch_without_requests(engine: Engine, db: Transactions) -> None:
    new = _open(db, funded_player(make_sessionmaker(engine), "ana", 0))
    found = _found(db, new.token)

    def due(seconds: float) -> sessions.Due:
        return sessions.due(found, now=T0 + timedelta(seconds=seconds), idle=IDLE)

    assert [due(0), due(29.999)] == [None, None]
    assert [due(30), due(1_800)] == ["touch", "touch"]  # idle exactly its most: still on
    assert due(1_800.001) == "expire"
    assert sessions.due(found, now=T0 + timedelta(minutes=5), idle=timedelta(minutes=4)) == (
        "expire"
    )


def test_keep_writes_the_last_request_at_most_every_30_seconds(
    engine: Engine, db: Transactions
) -> None:
    new = _open(db, funded_player(make_sessionmaker(engine), "ana", 0))
    found = _found(db, new.token)
    later = T0 + timedelta(seconds=10)
    assert db.write(sessions.keep, found=found, due=None, now=later) is None
    assert _found(db, new.token).last_seen_at == T0  # nothing written
    touched = T0 + timedelta(minutes=20)
    due = sessions.due(found, now=touched, idle=IDLE)
    assert db.write(sessions.keep, found=found, due=due, now=touched) is None
    again = _found(db, new.token)
    assert again.last_seen_at == touched
    # Kept alive by that request: 40 minutes after the log-in it is 20 minutes idle.
    assert sessions.due(again, now=T0 + timedelta(minutes=40), idle=IDLE) == "touch"
    assert sessions.due(found, now=T0 + timedelta(minutes=40), idle=IDLE) == "expire"


def test_a_session_idle_too_long_is_deleted_and_refused(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    idle, other = _open(db, ana), _open(db, ana, T0 + timedelta(minutes=29, seconds=45))
    now = T0 + IDLE + timedelta(seconds=1)
    found = _found(db, idle.token)
    due = sessions.due(found, now=now, idle=IDLE)
    assert due == "expire"
    refused = db.write(sessions.keep, found=found, due=due, now=now)
    assert isinstance(refused, UnauthorizedError)
    assert refused.detail == "the session expired after inactivity; log in again"
    assert isinstance(_look_up(db, idle.token)[0], UnauthorizedError)
    assert sessions.due(_found(db, other.token), now=now, idle=IDLE) is None


def test_log_out_one_or_every_other_session(engine: Engine, db: Transactions) -> None:
    sessions_ = make_sessionmaker(engine)
    ana, bob = funded_player(sessions_, "ana", 0), funded_player(sessions_, "bob", 0)
    one, two, three = (_open(db, ana) for _ in range(3))
    bobs = _open(db, bob)
    db.write(sessions.end, token_sha256=sessions.token_digest(one.token))
    assert isinstance(_look_up(db, one.token)[0], UnauthorizedError)
    assert _count(db) == 3
    db.write(sessions.end_all, player_id=ana, but=sessions.token_digest(three.token))
    gone, kept, still = _look_up(db, two.token, three.token, bobs.token)
    assert isinstance(gone, UnauthorizedError)
    assert isinstance(kept, sessions.Found)
    assert isinstance(still, sessions.Found)

    def end_all(session: Session) -> None:
        sessions.end_all(session=session, player_id=ana)

    db.write(end_all)
    assert _count(db) == 1  # bob's


@pytest.mark.parametrize("sent", ["", "not the token", None])
def test_a_change_with_the_cookie_needs_the_session_s_csrf_token(
    engine: Engine, db: Transactions, sent: str | None
) -> None:
    new = _open(db, funded_player(make_sessionmaker(engine), "ana", 0))
    holder = _found(db, new.token).holder
    sessions.check_csrf(sessions.Credentials(new.token, new.csrf_token), holder)
    credentials = sessions.Credentials(new.token, sent)
    if sent is None:  # nothing to prove: a bearer token, or a read
        sessions.check_csrf(credentials, holder)
        return
    with pytest.raises(ForbiddenError) as refused:
        sessions.check_csrf(credentials, holder)
    assert refused.value.code == "csrf"
