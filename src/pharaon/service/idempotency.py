"""Idempotency keys: a retried request with the same key and body gets the same result."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String, Update, bindparam, delete, select, true, update
from sqlalchemy.orm import Session

from pharaon.service import audit
from pharaon.service.errors import BadRequestError, IdempotencyConflictError
from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import IdempotencyKey
from pharaon.store.types import UTCDateTime

MAX_KEY_LENGTH = 200


def request_digest(route: str, body: dict[str, Any]) -> str:
    text = route + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_key(key: str | None) -> str:
    """The key, or :class:`BadRequestError` if it is missing or not 1..200 printable characters."""
    if key is None or not key.strip():
        raise BadRequestError("the Idempotency-Key header is required")
    if len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise BadRequestError(f"Idempotency-Key must be 1..{MAX_KEY_LENGTH} printable characters")
    return key


@dataclass(frozen=True, slots=True)
class Claim:
    """``replay_of`` is the earlier result's id when this key was already used."""

    key_id: int
    replay_of: int | None


# Built once: claiming is on the path of every purchase and deposit. The keys of a batch are
# one parameter, inserted in (player, key) order.
def _claim_sql(sql: Parts) -> Any:  # the dialect's own Insert
    keys = sql.rows("keys", player_id=Integer(), key=String(), request_sha256=String())
    return (
        sql.insert(IdempotencyKey)
        .from_select(
            ["player_id", "key", "request_sha256", "created_at"],
            select(
                keys.c.player_id,
                keys.c.key,
                keys.c.request_sha256,
                bindparam("now", type_=UTCDateTime()),
            )
            .where(true())  # SQLite reads ON CONFLICT after a bare SELECT as a join's ON
            .order_by(keys.c.player_id, keys.c.key),
        )
        .on_conflict_do_nothing(index_elements=["player_id", "key"])
        .returning(IdempotencyKey.player_id, IdempotencyKey.key, IdempotencyKey.id)
    )


_CLAIM = PerDialect(_claim_sql)
_CLAIMED = select(
    IdempotencyKey.player_id,
    IdempotencyKey.key,
    IdempotencyKey.id,
    IdempotencyKey.request_sha256,
    IdempotencyKey.result_id,
)
CONFLICT = "this Idempotency-Key was already used for another request; use a new key"


def claim(session: Session, *, player_id: int, key: str, digest: str, now: datetime) -> Claim:
    """Take ``key`` for this request in the caller's transaction, or find its earlier use.

    A concurrent request with the same key waits on the unique index until the first commits
    (then it replays its result) or rolls back (then it takes the key).
    """
    (claimed,) = claim_many(session, requests=[(player_id, key, digest)], now=now)
    if isinstance(claimed, IdempotencyConflictError):
        raise claimed
    return claimed


def claim_many(
    session: Session, *, requests: Sequence[tuple[int, str, str]], now: datetime
) -> list[Claim | IdempotencyConflictError]:
    """:func:`claim` for each (player id, key, request digest), with one insert; the claims,
    or the conflicts, in the requests' order. The (player, key) pairs must be distinct.

    Keys are inserted in (player, key) order, the same in every transaction, so two that
    claim the same keys at once wait for each other instead of deadlocking.
    """
    connection = session.connection()
    rows = [
        {"player_id": player_id, "key": key, "request_sha256": digest}
        for player_id, key, digest in sorted(set(requests))
    ]
    taken = {
        (int(player_id), key): int(key_id)
        for player_id, key, key_id in connection.execute(
            _CLAIM.on(connection), {"keys": rows, "now": now}
        )
    }
    used = [(p, k) for p, k, _ in requests if (p, k) not in taken]
    earlier = {}
    if used:
        for row in connection.execute(
            _CLAIMED.where(
                IdempotencyKey.player_id.in_({p for p, _ in used}),
                IdempotencyKey.key.in_({k for _, k in used}),
            )
        ):
            earlier[(int(row.player_id), row.key)] = row
    out: list[Claim | IdempotencyConflictError] = []
    for player_id, key, digest in requests:
        if (player_id, key) in taken:
            out.append(Claim(taken[(player_id, key)], None))
            continue
        row = earlier[(player_id, key)]
        if row.request_sha256 != digest or row.result_id is None:
            out.append(IdempotencyConflictError(CONFLICT))
        else:
            out.append(Claim(int(row.id), int(row.result_id)))
    return out


def release_many(session: Session, *, key_ids: Sequence[int]) -> None:
    """Give back keys taken in this transaction by requests that were then refused."""
    if key_ids:
        session.connection().execute(
            delete(IdempotencyKey).where(IdempotencyKey.id.in_(list(key_ids)))
        )


def _settle_sql(sql: Parts) -> Update:
    # The keys found by their ids (one_of: by the index, however small the table was when the
    # statement was planned), each given its result from the rows.
    results = sql.rows("results", key_id=Integer(), result=Integer())
    result = select(results.c.result).where(results.c.key_id == IdempotencyKey.id)
    return (
        update(IdempotencyKey)
        .where(sql.one_of(IdempotencyKey.id, "ids"))
        .values(result_id=result.scalar_subquery())
    )


_SETTLE = PerDialect(_settle_sql)


def settle(session: Session, *, key_id: int, result_id: int) -> None:
    """Remember the result of the request that took the key."""
    settle_many(session, results=[(key_id, result_id)])


def settle_many(session: Session, *, results: Sequence[tuple[int, int]]) -> None:
    """Remember the results (key id, result id) of the requests that took the keys."""
    if results:
        connection = session.connection()
        connection.execute(
            _SETTLE.on(connection),
            {
                "results": [{"key_id": key_id, "result": result} for key_id, result in results],
                "ids": [key_id for key_id, _ in results],
            },
        )


def settle_and_record(
    session: Session,
    *,
    claim: Claim,
    result_id: int,
    kind: str,
    player_id: int,
    payload: dict[str, Any],
    now: datetime,
) -> None:
    """Finish a player's idempotent money movement in the caller's transaction: the key points
    at its result and the audit log records it; the caller's commit makes both durable."""
    settle(session, key_id=claim.key_id, result_id=result_id)
    audit.append(session, kind=kind, actor=audit.player_actor(player_id), payload=payload, now=now)
