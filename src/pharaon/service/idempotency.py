"""Idempotency keys: a retried request with the same key and body gets the same result."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from pharaon.service import audit
from pharaon.service.errors import BadRequestError, IdempotencyConflictError
from pharaon.store.tables import IdempotencyKey

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


def claim(session: Session, *, player_id: int, key: str, digest: str, now: datetime) -> Claim:
    """Take ``key`` for this request in the caller's transaction, or find its earlier use.

    A concurrent request with the same key waits on the unique index until the first commits
    (then it replays its result) or rolls back (then it takes the key).
    """
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    key_id = session.execute(
        insert(IdempotencyKey)
        .values(player_id=player_id, key=key, request_sha256=digest, created_at=now)
        .on_conflict_do_nothing(index_elements=["player_id", "key"])
        .returning(IdempotencyKey.id)
    ).scalar_one_or_none()
    if key_id is not None:
        return Claim(int(key_id), None)
    row = session.execute(
        select(IdempotencyKey.id, IdempotencyKey.request_sha256, IdempotencyKey.result_id).where(
            IdempotencyKey.player_id == player_id, IdempotencyKey.key == key
        )
    ).one()
    if row.request_sha256 != digest or row.result_id is None:
        raise IdempotencyConflictError(
            "this Idempotency-Key was already used for another request; use a new key"
        )
    return Claim(int(row.id), int(row.result_id))


def settle(session: Session, *, key_id: int, result_id: int) -> None:
    """Remember the result of the request that took the key."""
    session.execute(
        update(IdempotencyKey).where(IdempotencyKey.id == key_id).values(result_id=result_id)
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
    """Finish a player's idempotent money movement in one commit: the key points at its
    result and the audit log records it."""
    settle(session, key_id=claim.key_id, result_id=result_id)
    audit.append(session, kind=kind, actor=f"player:{player_id}", payload=payload, now=now)
    session.commit()
