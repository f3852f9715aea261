"""A witness's judgement of a log's checkpoint: cosign it, or refuse it, loudly.

A witness (``pharaon witness``, run by a regulator or an auditor) holds the last checkpoint it
cosigned. Shown a newer one, signed by the log's key, it asks the log for the consistency
proof from the one it holds and cosigns only if the proof holds (c2sp.org/tlog-cosignature):
a log whose history was rewritten cannot give one. A checkpoint older than the held one, or
of the same size with another root, is refused likewise. Pure: the proof is fetched by the
caller's function, the state kept by the caller.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass

from pharaon.pool import notes, tlog


class RefusedError(Exception):
    """The log showed a checkpoint this witness must not cosign: one line saying why."""


@dataclass(frozen=True, slots=True)
class Witnessed:
    """The last checkpoint cosigned: its size and root, and the note with both signatures."""

    origin: str
    size: int
    root: bytes
    note: str

    def to_json(self) -> str:
        return json.dumps(
            {
                "origin": self.origin,
                "size": self.size,
                "root": base64.b64encode(self.root).decode(),
                "note": self.note,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Witnessed:
        """A state written by :meth:`to_json`; :class:`ValueError` if it is not one."""
        try:
            data = json.loads(text)
            witnessed = cls(
                str(data["origin"]),
                int(data["size"]),
                base64.b64decode(data["root"], validate=True),
                str(data["note"]),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise ValueError(f"not a witness's state: {exc}") from None
        if len(witnessed.root) != tlog.HASH_BYTES or witnessed.size < 0:
            raise ValueError("not a witness's state: bad size or root")
        return witnessed


ProofFetcher = Callable[[int, int], list[bytes]]


def judge(
    note: str,
    *,
    log_key: notes.Verifier,
    signer: notes.Signer,
    last: Witnessed | None,
    consistency: ProofFetcher,
    now: int,
) -> Witnessed | None:
    """The cosigned checkpoint of ``note``, the log's latest signed checkpoint; None if it is
    the one ``last`` holds already. :class:`RefusedError` if it is not signed by ``log_key``,
    not a checkpoint of its origin, or not consistent with ``last`` (the proof from
    ``last.size`` to its size fetched by ``consistency(first, second)``). ``now``: POSIX
    seconds, the cosignature's time."""
    try:
        parsed = notes.parse(note)
        signature = notes.verify(parsed, log_key)
        checkpoint = notes.parse_checkpoint(parsed.text)
    except notes.NoteError as exc:
        raise RefusedError(f"the log's checkpoint does not hold: {exc}") from None
    if checkpoint.origin != log_key.name:
        raise RefusedError(
            f"the checkpoint is of log {checkpoint.origin!r}, this witness watches {log_key.name!r}"
        )
    if last is not None:
        if checkpoint.size < last.size:
            raise RefusedError(
                f"the log shows {checkpoint.size} records, fewer than the {last.size} this "
                "witness cosigned: the log went back"
            )
        if checkpoint.size == last.size:
            if checkpoint.root != last.root:
                raise RefusedError(
                    f"the log's checkpoint of {checkpoint.size} records has another root than "
                    "the one this witness cosigned: the log's history was rewritten"
                )
            return None
        proof = consistency(last.size, checkpoint.size)
        if not tlog.verify_consistency(
            last.size, checkpoint.size, last.root, checkpoint.root, proof
        ):
            raise RefusedError(
                f"the log's checkpoint of {checkpoint.size} records is not consistent with the "
                f"{last.size} records this witness cosigned: the log's history was rewritten"
            )
    cosigned = notes.Note(parsed.text, (signature,)).with_signatures(
        signer.cosign(parsed.text, now)
    )
    return Witnessed(checkpoint.origin, checkpoint.size, checkpoint.root, str(cosigned))
