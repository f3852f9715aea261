"""Keys revealed at close: once a block is closed (sold out or deactivated), the operator
publishes the vendor's and the operator's keys it was made from, so that anyone can regenerate
it (``pharaon reproduce``) and compare its units and Merkle root with the published ones.

A key is stored only if its SHA-256 is the commitment the block's manifest published, and only
when every block made by the same pair of keys (the same two commitments: one pair may make a
block per price) is closed: revealing the pair reveals them all, so it is published for all of
them at once. Revealing again what is published answers the publication. Each function works in
the caller's transaction and neither commits nor rolls back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from pharaon.pool.keys import commitment
from pharaon.service import audit, checkpoints
from pharaon.service.errors import ConflictError, InvalidError, NotFoundError, NotRevealedError
from pharaon.store.dialect import PerDialect
from pharaon.store.tables import Block, RevealedKeys

CLOSED = ("sold_out", "deactivated")

_INSERT = PerDialect(
    lambda sql: (
        sql.insert(RevealedKeys)
        .on_conflict_do_nothing(index_elements=["block_id"])
        .returning(RevealedKeys.block_id)
    )
)


@dataclass(frozen=True, slots=True)
class Revealed:
    """A block's published keys (hex), their commitments, the design its manifest names, and
    every block the same pair made (``block_ids``, this one included, all revealed)."""

    block_id: int
    vendor_key: str
    operator_key: str
    vendor_key_commitment: str
    operator_key_commitment: str
    design_name: str
    design_digest: str
    revealed_at: datetime
    block_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Made:
    """A block as its manifest says it was made."""

    block_id: int
    state: str
    vendor_key_commitment: str | None
    operator_key_commitment: str | None
    design_name: str
    design_digest: str


def _made(block_id: int, state: str, manifest_json: str) -> _Made:
    manifest: dict[str, Any] = json.loads(manifest_json)

    def text(name: str) -> str | None:
        value = manifest.get(name)
        return value if isinstance(value, str) else None

    return _Made(
        block_id=block_id,
        state=state,
        vendor_key_commitment=text("vendor_key_commitment"),
        operator_key_commitment=text("operator_key_commitment"),
        design_name=text("design_name") or "",
        design_digest=text("design_digest") or "",
    )


def _block(connection: Connection, block_id: int) -> _Made:
    row = connection.execute(
        select(Block.state, Block.manifest_json).where(Block.id == block_id)
    ).first()
    if row is None:
        raise NotFoundError(f"no block with id {block_id}")
    return _made(block_id, str(row.state), str(row.manifest_json))


def _same_pair(connection: Connection, vendor: str, operator: str) -> list[_Made]:
    """Every block made by the pair of keys of commitments ``vendor`` and ``operator``, by
    id."""
    rows = connection.execute(
        select(Block.id, Block.state, Block.manifest_json)
        .where(Block.manifest_json.contains(vendor), Block.manifest_json.contains(operator))
        .order_by(Block.id)
    )
    found = [_made(int(r.id), str(r.state), str(r.manifest_json)) for r in rows]
    return [
        b
        for b in found
        if (b.vendor_key_commitment, b.operator_key_commitment) == (vendor, operator)
    ]


def are_revealed(connection: Connection, *, vendor: str | None, operator: str | None) -> bool:
    """Whether the pair of keys of commitments ``vendor`` and ``operator`` is published (a
    block it makes has draws anyone can tell: the loader refuses it)."""
    if vendor is None or operator is None:
        return False
    ids = [b.block_id for b in _same_pair(connection, vendor, operator)]
    if not ids:
        return False
    found = connection.execute(
        select(RevealedKeys.block_id).where(RevealedKeys.block_id.in_(ids)).limit(1)
    ).first()
    return found is not None


def reveal(
    *,
    session: Session,
    block_id: int,
    vendor_key: bytes,
    operator_key: bytes,
    actor: str,
    now: datetime,
) -> Revealed:
    """Publish the keys of closed block ``block_id`` and of every other block of the same pair,
    in the caller's transaction, with an audit record ``block_keys_revealed`` and a checkpoint
    of the audit chain; returns the publication. Refuses (404) an unknown block; (409) one not
    closed, one whose manifest has no commitments, and a pair that made a block still loaded
    or open; (422) a key whose SHA-256 is not the manifest's commitment. The same keys again
    answer the publication, and record nothing."""
    block = _block(session.connection(), block_id)
    if block.state not in CLOSED:
        raise ConflictError(
            f"block {block_id} is {block.state}: its keys are published once it is sold out "
            "or deactivated"
        )
    if block.vendor_key_commitment is None or block.operator_key_commitment is None:
        raise ConflictError(
            f"block {block_id} was made before manifests committed to their keys: there is "
            "nothing to check its keys against"
        )
    wrong = [
        who
        for who, key, committed in (
            ("vendor", vendor_key, block.vendor_key_commitment),
            ("operator", operator_key, block.operator_key_commitment),
        )
        if commitment(key) != committed
    ]
    if wrong:
        raise InvalidError(
            f"the {' and the '.join(wrong)} key {'is' if len(wrong) == 1 else 'are'} not block "
            f"{block_id}'s: SHA-256 differs from the manifest's commitment"
        )
    pair = _same_pair(
        session.connection(), block.vendor_key_commitment, block.operator_key_commitment
    )
    still = [b for b in pair if b.state not in CLOSED]
    if still:
        listed = ", ".join(f"block {b.block_id} ({b.state})" for b in still)
        raise ConflictError(
            f"the keys of block {block_id} also made {listed}: they are published once every "
            "block they made is sold out or deactivated"
        )
    # A row already there (revealed before, or by a reveal committed meanwhile) stays as is.
    added = [
        b.block_id
        for b in pair
        if session.execute(
            _INSERT.on(session.connection()).values(
                block_id=b.block_id,
                vendor_key=vendor_key.hex(),
                operator_key=operator_key.hex(),
                revealed_at=now,
                revealed_by=actor,
            )
        ).first()
        is not None
    ]
    if added:
        audit.append(
            session,
            kind="block_keys_revealed",
            actor=actor,
            payload={
                "block_ids": added,
                "vendor_key_commitment": block.vendor_key_commitment,
                "operator_key_commitment": block.operator_key_commitment,
            },
            now=now,
        )
        checkpoints.take(session, reason="keys_revealed", now=now)
    return revealed(connection=session.connection(), block_id=block_id)


def revealed(*, connection: Connection, block_id: int) -> Revealed:
    """The published keys of block ``block_id``; 404 ``not_found`` for an unknown block,
    ``not_revealed`` for one whose keys are not published."""
    block = _block(connection, block_id)
    row = connection.execute(
        select(RevealedKeys.vendor_key, RevealedKeys.operator_key, RevealedKeys.revealed_at).where(
            RevealedKeys.block_id == block_id
        )
    ).first()
    if row is None:
        raise NotRevealedError(f"the keys of block {block_id} are not published")
    same = connection.execute(
        select(RevealedKeys.block_id)
        .where(
            RevealedKeys.vendor_key == row.vendor_key,
            RevealedKeys.operator_key == row.operator_key,
        )
        .order_by(RevealedKeys.block_id)
    )
    return Revealed(
        block_id=block_id,
        vendor_key=str(row.vendor_key),
        operator_key=str(row.operator_key),
        vendor_key_commitment=str(block.vendor_key_commitment),
        operator_key_commitment=str(block.operator_key_commitment),
        design_name=block.design_name,
        design_digest=block.design_digest,
        revealed_at=row.revealed_at,
        block_ids=tuple(int(i) for i in same.scalars()),
    )
