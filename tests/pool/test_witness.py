"""A witness's judgement (pharaon.pool.witness): it cosigns a checkpoint consistent with the
one it cosigned last, and refuses, with one line, one that is not."""

from __future__ import annotations

import pytest

from pharaon.pool import notes, tlog
from pharaon.pool.witness import ProofFetcher, RefusedError, Witnessed, judge

LOG = notes.Signer("pharaon.example/audit-log", bytes(range(32)))
WITNESS = notes.Signer("w.example/w", bytes(range(32, 64)), kind=notes.COSIGNATURE_V1)
HONEST = [tlog.leaf_hash(i.to_bytes(2, "big")) for i in range(20)]
FORGED = [*HONEST[:4], tlog.leaf_hash(b"forged"), *HONEST[5:]]


def _note(leaves: list[bytes], size: int, signer: notes.Signer = LOG) -> str:
    body = notes.Checkpoint(LOG.verifier.name, size, tlog.root(leaves[:size])).text
    return body + "\n" + signer.sign(body)


def _fetcher(leaves: list[bytes]) -> ProofFetcher:
    def consistency(first: int, second: int) -> list[bytes]:
        nodes = {(0, i): h for i, h in enumerate(leaves[:second])}
        level, row = 0, leaves[:second]
        while len(row) > 1:
            row = [tlog.node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)]
            level += 1
            nodes.update({(level, i): h for i, h in enumerate(row)})
        return tlog.prove(tlog.consistency_ranges(first, second), nodes.__getitem__)

    return consistency


def _judge(note: str, last: Witnessed | None, leaves: list[bytes]) -> Witnessed | None:
    return judge(
        note,
        log_key=LOG.verifier,
        signer=WITNESS,
        last=last,
        consistency=_fetcher(leaves),
        now=1_700_000_000,
    )


def test_a_growing_log_is_cosigned_and_a_rewritten_one_refused() -> None:
    first = _judge(_note(HONEST, 6), None, HONEST)
    assert first is not None
    assert first.size == 6
    cosigned = notes.parse(first.note)
    notes.verify(cosigned, LOG.verifier)
    assert notes.verify(cosigned, WITNESS.verifier).timestamp == 1_700_000_000
    assert _judge(_note(HONEST, 6), first, HONEST) is None  # nothing new
    second = _judge(_note(HONEST, 11), first, HONEST)
    assert second is not None
    assert second.size == 11
    assert Witnessed.from_json(second.to_json()) == second
    # The same log with record 5 rewritten: no proof from 11 can hold, nor the same size.
    with pytest.raises(RefusedError, match="history was rewritten"):
        _judge(_note(FORGED, 15), second, FORGED)
    with pytest.raises(RefusedError, match="another root"):
        _judge(_note(FORGED, 11), second, FORGED)
    with pytest.raises(RefusedError, match="went back"):
        _judge(_note(HONEST, 10), second, HONEST)


def test_a_checkpoint_not_signed_by_the_log_is_refused() -> None:
    other = notes.Signer(LOG.verifier.name, bytes(range(1, 33)))
    with pytest.raises(RefusedError, match="not signed by"):
        _judge(_note(HONEST, 4, other), None, HONEST)
    note = _note(HONEST, 4).replace("\n4\n", "\n5\n")
    with pytest.raises(RefusedError, match="does not hold"):
        _judge(note, None, HONEST)
    with pytest.raises(RefusedError, match="does not hold"):
        _judge("garbage", None, HONEST)


def test_a_state_file_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not a witness's state"):
        Witnessed.from_json('{"origin": "o"}')
    with pytest.raises(ValueError, match="bad size or root"):
        Witnessed.from_json('{"origin": "o", "size": 1, "root": "AAAA", "note": ""}')
