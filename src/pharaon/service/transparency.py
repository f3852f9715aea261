"""The audit log's signed checkpoints, and the witnesses' cosignatures of them.

A checkpoint of the audit chain (service/checkpoints.py) with its tree root is published as a
C2SP checkpoint (``<origin>\\n<seq>\\n<base64 root>\\n``) in a signed note, signed on the fly
with the operator's checkpoint key (Ed25519 signatures are deterministic: the same note each
time), followed by the cosignature lines that witnesses sent for it (docs/proofs.md).

The key is a 32-byte seed in the key folder, ``checkpoints.key`` (mode 0600, made with the
receipts' key by the first start, or by ``pharaon keys new``), apart from ``receipts.key``: a
key signs one kind of message (a receipt's text is never taken for a checkpoint's), and the
key that witnesses and auditors are told to trust is the log's alone. Its name in the notes is
the log's origin (``PHARAON_LOG_ORIGIN``).

A witness POSTs the note it cosigned (``POST /api/v1/audit/cosignatures``); the server keeps
its cosignature if the note is one of its own checkpoints and the witness's key is one of
``PHARAON_WITNESS_KEYS``, checked.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from pharaon.pool import notes
from pharaon.pool.keys import signing_seed
from pharaon.service import checkpoints
from pharaon.service.errors import ForbiddenError, InvalidError, NotFoundError
from pharaon.store.dialect import PerDialect
from pharaon.store.tables import AuditCheckpoint, AuditCosignature

KEY_FILE = "checkpoints.key"

_INSERT_COSIGNATURE = PerDialect(
    lambda sql: sql.insert(AuditCosignature).on_conflict_do_nothing(
        index_elements=["tree_size", "witness", "key_id"]
    )
)


def load(keys_dir: Path, origin: str, *, create: bool = False) -> notes.Signer | None:
    """The signer of ``keys_dir``'s checkpoint key, named ``origin``; None if there is none,
    unless ``create`` (the first start), which writes one first; :class:`SeedKeyError` if it
    cannot be read or made."""
    seed = signing_seed(keys_dir / KEY_FILE, "checkpoint", create=create)
    if seed is None:
        return None
    return notes.Signer(origin, seed)


def witness_keys(text: str) -> tuple[notes.Verifier, ...]:
    """The witnesses' verifier keys, comma-separated in ``text``; :class:`notes.NoteError` if
    one is not a cosignature/v1 (0x04) verifier key."""
    out = []
    for item in text.split(","):
        if item.strip():
            key = notes.parse_vkey(item)
            if key.kind != notes.COSIGNATURE_V1:
                raise notes.NoteError(f"the witness key of {key.name} is not a cosignature/v1 key")
            out.append(key)
    return tuple(out)


def _cosignature_lines(connection: Connection, size: int, root: str) -> str:
    rows = connection.execute(
        select(AuditCosignature.witness, AuditCosignature.signature)
        .where(AuditCosignature.tree_size == size, AuditCosignature.root == root)
        .order_by(AuditCosignature.id)
    )
    return "".join(f"{notes.DASH} {name} {signature}\n" for name, signature in rows)


def checkpoint_note(
    *, connection: Connection, signer: notes.Signer, size: int | None = None
) -> str:
    """The signed note of the last checkpoint with a root (of ``size`` records if given), with
    the witnesses' cosignatures received for it; :class:`NotFoundError` if there is none."""
    found = checkpoints.signable(connection=connection, size=size)
    if found is None or found.root is None:
        which = "" if size is None else f" of {size} records"
        raise NotFoundError(f"no signed checkpoint{which} yet")
    body = notes.Checkpoint(signer.verifier.name, found.seq, bytes.fromhex(found.root)).text
    return body + "\n" + signer.sign(body) + _cosignature_lines(connection, found.seq, found.root)


@dataclass(frozen=True, slots=True)
class Cosigned:
    tree_size: int
    witnesses: tuple[str, ...]  # the names of the witnesses whose cosignatures were kept


def receive_cosignatures(
    session: Session,
    *,
    note: str,
    log_key: notes.Verifier,
    witnesses: Sequence[notes.Verifier],
    now: datetime,
) -> Cosigned:
    """Keep the cosignatures of ``witnesses`` on ``note``, a checkpoint this server signed
    (``log_key``, its checkpoint key's public half) and stored; :class:`InvalidError` for a
    note that is not one or a cosignature that does not hold, :class:`NotFoundError` for a
    checkpoint it never took, :class:`ForbiddenError` when no witness is configured."""
    if not witnesses:
        raise ForbiddenError("this server accepts no cosignatures: PHARAON_WITNESS_KEYS is empty")
    try:
        parsed = notes.parse(note)
        notes.verify(parsed, log_key)
        checkpoint = notes.parse_checkpoint(parsed.text)
    except notes.NoteError as exc:
        raise InvalidError(f"not a checkpoint of this log: {exc}") from None
    root = checkpoint.root.hex()
    known = session.execute(
        select(AuditCheckpoint.id)
        .where(AuditCheckpoint.seq == checkpoint.size, AuditCheckpoint.root == root)
        .limit(1)
    ).first()
    if known is None:
        raise NotFoundError(f"no checkpoint of {checkpoint.size} records with that root")
    rows: list[dict[str, object]] = []
    names: list[str] = []
    for witness in witnesses:
        if not parsed.signed_by(witness):
            continue
        try:
            signature = notes.verify(parsed, witness)
        except notes.NoteError as exc:
            raise InvalidError(f"bad cosignature: {exc}") from None
        stamp = signature.timestamp or 0
        names.append(witness.name)
        rows.append(
            {
                "tree_size": checkpoint.size,
                "root": root,
                "witness": witness.name,
                "key_id": witness.key_id.hex(),
                "signature": signature.line.split(" ")[2].rstrip("\n"),
                "cosigned_at": datetime.fromtimestamp(min(stamp, 2**37), UTC),
                "received_at": now,
            }
        )
    if not rows:
        raise InvalidError("the note carries no cosignature of a witness this server knows")
    connection = session.connection()
    connection.execute(_INSERT_COSIGNATURE.on(connection), rows)
    return Cosigned(checkpoint.size, tuple(names))


@dataclass(frozen=True, slots=True)
class SignedCheckpoint:
    """A checkpoint a file kept, its signatures checked: ``size`` records, ``root`` (hex)."""

    size: int
    root: str
    cosigned_by: tuple[str, ...]


def check_published(
    text: str, *, log_key: notes.Verifier, witnesses: Sequence[notes.Verifier] = ()
) -> list[SignedCheckpoint]:
    """The checkpoints of the signed notes in ``text`` (one after the other, as published),
    each signed by ``log_key`` and of its origin, and each cosignature of a known witness
    checked; :class:`notes.NoteError` naming the first that is not."""
    found = notes.split_notes(text)
    if not found:
        raise notes.NoteError("no signed note in it")
    out = []
    for number, note in enumerate(found, start=1):
        try:
            parsed = notes.parse(note)
            notes.verify(parsed, log_key)
            checkpoint = notes.parse_checkpoint(parsed.text)
            if checkpoint.origin != log_key.name:
                raise notes.NoteError(
                    f"its origin is {checkpoint.origin!r}, the log's key is {log_key.name!r}"
                )
            cosigners = []
            for witness in witnesses:
                if parsed.signed_by(witness):
                    notes.verify(parsed, witness)
                    cosigners.append(witness.name)
        except notes.NoteError as exc:
            raise notes.NoteError(f"note {number}: {exc}") from None
        out.append(SignedCheckpoint(checkpoint.size, checkpoint.root.hex(), tuple(cosigners)))
    return out


def public_key(signer: notes.Signer) -> str:
    """The checkpoint key's 32 raw bytes, in base64."""
    return base64.b64encode(signer.verifier.public_key).decode()
