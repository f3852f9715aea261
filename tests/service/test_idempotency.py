"""Idempotency keys (service/idempotency.py), on both databases: a key is taken once per
player, a retry with the same request replays its result, another request with it is refused,
and a key given back is free again."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from pharaon.service import idempotency
from pharaon.service.clock import utcnow
from pharaon.service.errors import BadRequestError, IdempotencyConflictError
from pharaon.store.engine import make_sessionmaker
from pharaon.store.tables import AuditRecord, IdempotencyKey
from pharaon.store.transactions import Transactions
from tests.service.helpers import funded_player

DEPOSIT = idempotency.request_digest("deposit", {"amount_cents": 500})
OTHER = idempotency.request_digest("deposit", {"amount_cents": 501})


def _claim(db: Transactions, player_id: int, key: str, digest: str) -> idempotency.Claim:
    return db.write(idempotency.claim, player_id=player_id, key=key, digest=digest, now=utcnow())


def _keys(db: Transactions) -> list[tuple[int, str, int | None]]:
    return db.read(
        lambda connection: [
            (int(p), k, r)
            for p, k, r in connection.execute(
                select(
                    IdempotencyKey.player_id, IdempotencyKey.key, IdempotencyKey.result_id
                ).order_by(IdempotencyKey.player_id, IdempotencyKey.key)
            )
        ]
    )


@pytest.mark.parametrize("key", [None, "", "   ", "x" * 201, "tab\there", "new\nline"])
def test_check_key_refuses_a_missing_or_malformed_key(key: str | None) -> None:
    with pytest.raises(BadRequestError):
        idempotency.check_key(key)


def test_check_key_and_the_request_digest() -> None:
    assert idempotency.check_key("x" * 200) == "x" * 200
    assert idempotency.check_key(" a key ") == " a key "
    # The digest is the route and the body, whatever the order of the body's fields.
    one = idempotency.request_digest("play", {"stake_cents": 100, "mode": "auto"})
    assert one == idempotency.request_digest("play", {"mode": "auto", "stake_cents": 100})
    assert one != idempotency.request_digest("play", {"stake_cents": 200, "mode": "auto"})
    assert one != idempotency.request_digest("deposit", {"stake_cents": 100, "mode": "auto"})
    assert len(one) == 64
    assert set(one) <= set("0123456789abcdef")


def test_a_settled_key_replays_and_refuses_another_request(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    first = _claim(db, ana, "k1", DEPOSIT)
    assert first.replay_of is None
    db.write(idempotency.settle, key_id=first.key_id, result_id=42)
    assert _claim(db, ana, "k1", DEPOSIT) == idempotency.Claim(first.key_id, 42)
    with pytest.raises(IdempotencyConflictError) as refused:
        _claim(db, ana, "k1", OTHER)
    assert refused.value.code == "idempotency_conflict"
    assert _keys(db) == [(ana, "k1", 42)]  # neither the replay nor the refusal added a key


def test_a_key_taken_but_never_settled_is_refused_not_replayed(
    engine: Engine, db: Transactions
) -> None:
    """A key whose first request committed without a result has nothing to replay."""
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    _claim(db, ana, "k", DEPOSIT)
    with pytest.raises(IdempotencyConflictError):
        _claim(db, ana, "k", DEPOSIT)


def test_claim_many_answers_in_the_requests_order(engine: Engine, db: Transactions) -> None:
    sessions = make_sessionmaker(engine)
    ana, bob = funded_player(sessions, "ana", 0), funded_player(sessions, "bob", 0)
    old = _claim(db, ana, "old", DEPOSIT)
    db.write(idempotency.settle_many, results=[(old.key_id, 7)])
    requests = [
        (bob, "old", OTHER),  # new: another player's key of the same name
        (ana, "old", OTHER),  # the same key for another request
        (ana, "a", DEPOSIT),  # new
        (ana, "old", DEPOSIT),  # a retry
    ]
    bobs, conflict, new_a, replay = db.write(
        idempotency.claim_many, requests=requests, now=utcnow()
    )
    assert isinstance(conflict, IdempotencyConflictError)
    assert isinstance(bobs, idempotency.Claim)
    assert bobs.replay_of is None
    assert isinstance(new_a, idempotency.Claim)
    assert new_a.replay_of is None
    assert replay == idempotency.Claim(old.key_id, 7)
    assert len({bobs.key_id, new_a.key_id, old.key_id}) == 3
    db.write(idempotency.settle_many, results=[(bobs.key_id, 8), (new_a.key_id, 9)])
    assert _keys(db) == [(ana, "a", 9), (ana, "old", 7), (bob, "old", 8)]


def test_a_released_key_is_free_again(engine: Engine, db: Transactions) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)

    def claim_then_refuse(session: Session) -> int:
        [claim] = idempotency.claim_many(session, requests=[(ana, "k", DEPOSIT)], now=utcnow())
        assert isinstance(claim, idempotency.Claim)
        idempotency.release_many(session, key_ids=[claim.key_id])
        return claim.key_id

    db.write(claim_then_refuse)
    assert _keys(db) == []
    # Now another request may take it.
    again = _claim(db, ana, "k", OTHER)
    assert again.replay_of is None
    db.write(idempotency.release_many, key_ids=[])  # nothing to give back: no statement
    assert _keys(db) == [(ana, "k", None)]


def test_settle_and_record_points_the_key_and_appends_the_audit(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 0)
    now = utcnow()
    before = db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(AuditRecord)
        ).scalar_one()
    )

    def settle(session: Session) -> None:
        claim = idempotency.claim(session, player_id=ana, key="k", digest=DEPOSIT, now=now)
        idempotency.settle_and_record(
            session,
            claim=claim,
            result_id=123,
            kind="deposit",
            player_id=ana,
            payload={"deposit_id": 123, "player_id": ana},
            now=now,
        )

    db.write(settle)
    assert _keys(db) == [(ana, "k", 123)]
    records = db.read(
        lambda connection: connection.execute(
            select(
                AuditRecord.seq, AuditRecord.kind, AuditRecord.actor, AuditRecord.payload
            ).order_by(AuditRecord.seq)
        ).all()
    )
    assert len(records) == before + 1
    seq, kind, actor, payload = records[-1]
    assert (seq, kind, actor) == (before + 1, "deposit", f"player:{ana}")
    assert json.loads(payload) == {"deposit_id": 123, "player_id": ana}


@pytest.mark.parametrize("first_commits", [True, False])
def test_a_concurrent_claim_waits_for_the_first(engine: Engine, first_commits: bool) -> None:
    """The same key claimed while its first claim's transaction is open: the second waits, then
    replays the first's result if it committed, or takes the key if it rolled back."""
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 0)
    now = utcnow()
    seen: list[idempotency.Claim | BaseException] = []

    def second() -> None:
        try:
            with factory() as session, session.begin():
                seen.append(
                    idempotency.claim(session, player_id=ana, key="k", digest=DEPOSIT, now=now)
                )
        except BaseException as exc:  # reported to the test's thread
            seen.append(exc)

    with factory() as session:
        session.begin()
        first = idempotency.claim(session, player_id=ana, key="k", digest=DEPOSIT, now=now)
        thread = threading.Thread(target=second)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive()  # waiting for the first
        assert seen == []
        if first_commits:
            idempotency.settle(session, key_id=first.key_id, result_id=77)
            session.commit()
        else:
            session.rollback()
    thread.join(30)
    assert not thread.is_alive()
    [claim] = seen
    assert isinstance(claim, idempotency.Claim), claim
    if first_commits:
        assert claim == idempotency.Claim(first.key_id, 77)
    else:
        assert claim.replay_of is None
