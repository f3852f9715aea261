"""The regulator's trace of every gaming event (French practice for online gaming accounts: the
operator's id, the event's time and id, the player's id, session and client address): the
events join the audit chain (service/audit.py), which nothing may delete (its triggers), and
``pharaon trace export`` writes those of a period as JSON Lines beside a JSON Schema and a
SHA-256 manifest (docs/traces.md).

A player's own request names where it came from (:class:`Seen`): the session, by a public id
(the first 16 hex digits of its token's SHA-256, never the token), and the client's address."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Row, select
from sqlalchemy.orm import Session

from pharaon.service import audit
from pharaon.store.tables import AuditRecord

SCHEMA_FILE = "traces.schema.json"
TRACES_FILE = "traces.jsonl"
MANIFEST_FILE = "manifest.json"
# The audit records that are gaming events of a player (the others are the operator's: blocks
# loaded, checkpoints, operators added).
EVENTS = (
    "account_opened",
    "login",
    "login_failed",
    "logout",
    "deposit_limits",
    "loss_limit",
    "stake_limits",
    "self_exclusion",
    "cool_off",
    "reality_check",
    "password_changed",
    "account_closed",
    "deposit",
    "deposit_refused",
    "purchase",
    "purchase_refused",
    "prize",
    "play_finished_by_server",
    "player_note",
    "player_suspend",
    "player_exclude",
    "player_lift",
    "player_close",
    "identity_verified",
    "identity_suspended",
    "player_banned",
    "withdrawal",
    "withdrawal_refused",
    "withdrawal_paid",
    "withdrawal_rejected",
)
# Refusals of a deposit or a purchase traced: what the player may not do, not a malformed
# request.
REFUSALS = frozenset(
    {
        "self_excluded",
        "suspended",
        "deposit_limit",
        "loss_limit",
        "stake_limit",
        "moderators_required",
        "insufficient_funds",
        "identity_unverified",
    }
)


@dataclass(frozen=True, slots=True)
class Seen:
    """Where a player's request came from: a session's public id, a client address."""

    session_id: str | None = None
    address: str | None = None

    def fields(self) -> dict[str, str | None]:
        """The fields it adds to an audit record: none when nothing was seen (a command, a
        test), which the export writes as nulls."""
        if self.session_id is None and self.address is None:
            return {}
        return {"session_id": self.session_id, "address": self.address}


UNSEEN = Seen()


def session_id(token_sha256: str) -> str:
    """A session's public id in the trace."""
    return token_sha256[:16]


def record(
    session: Session,
    *,
    kind: str,
    player_id: int | None,
    seen: Seen,
    now: datetime,
    **details: Any,
) -> None:
    """One event of ``player_id`` (None: no account named, a log-in with an unknown e-mail) in
    the audit chain, in the caller's transaction."""
    actor = audit.player_actor(player_id) if player_id is not None else audit.ANONYMOUS_ACTOR
    audit.append(
        session,
        kind=kind,
        actor=actor,
        payload={"player_id": player_id, **seen.fields(), **details},
        now=now,
    )


def events(
    *, connection: Connection, since: datetime, until: datetime
) -> Iterator[Row[*tuple[Any, ...]]]:
    """The gaming events from ``since`` (included) to ``until`` (excluded), in chain order."""
    rows = connection.execute(
        select(
            AuditRecord.seq,
            AuditRecord.created_at,
            AuditRecord.kind,
            AuditRecord.actor,
            AuditRecord.payload,
            AuditRecord.sha256,
        )
        .where(
            AuditRecord.kind.in_(EVENTS),
            AuditRecord.created_at >= since,
            AuditRecord.created_at < until,
        )
        .order_by(AuditRecord.seq)
        .execution_options(yield_per=1_000)
    )
    yield from rows


def line(operator: str, row: Row[*tuple[Any, ...]]) -> dict[str, Any]:
    """One event as the export writes it (traces.schema.json)."""
    payload = json.loads(row.payload)
    player = payload.pop("player_id", None)
    return {
        "operator": operator,
        "event_id": row.seq,
        "event_time": row.created_at.isoformat(),
        "event": row.kind,
        "player_id": player,
        "session_id": payload.pop("session_id", None),
        "client_address": payload.pop("address", None),
        "actor": row.actor,
        "details": payload,
        "record_sha256": row.sha256,
    }


def export(
    *, connection: Connection, folder: Path, operator: str, since: datetime, until: datetime
) -> dict[str, Any]:
    """Write the events of [``since``, ``until``) into ``folder`` (made, must be empty): the
    JSON Lines, the schema they follow, and a manifest of both with their SHA-256; the
    manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty")
    count = 0
    digest = hashlib.sha256()
    with (folder / TRACES_FILE).open("wb") as out:
        for row in events(connection=connection, since=since, until=until):
            text = json.dumps(line(operator, row), sort_keys=True, ensure_ascii=False) + "\n"
            out.write(text.encode())
            digest.update(text.encode())
            count += 1
    schema = resources.files("pharaon.service").joinpath(SCHEMA_FILE).read_bytes()
    (folder / SCHEMA_FILE).write_bytes(schema)
    manifest = {
        "operator": operator,
        "from": since.isoformat(),
        "to": until.isoformat(),
        "events": count,
        "files": {
            TRACES_FILE: digest.hexdigest(),
            SCHEMA_FILE: hashlib.sha256(schema).hexdigest(),
        },
    }
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (folder / MANIFEST_FILE).write_text(text, encoding="utf-8")
    return manifest


def record_export(*, session: Session, manifest: dict[str, Any], actor: str, now: datetime) -> None:
    """A ``trace_export`` record naming ``actor``, the period, the count and each file's
    SHA-256, in the caller's transaction: who took the trace, and which."""
    audit.append(
        session,
        kind="trace_export",
        actor=actor,
        payload={k: manifest[k] for k in ("from", "to", "events", "files")},
        now=now,
    )
