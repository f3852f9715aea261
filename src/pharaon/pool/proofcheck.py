"""Checking a play's proof offline (the JSON of ``GET /api/v1/plays/{id}/proof``), as
docs/proofs.md describes it for a checker in any language: the unit's leaf, hashed up its
audit path, must give the block's Merkle root; and the ticket must win exactly its lot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pharaon.game.evaluate import MalformedUnitError, evaluate
from pharaon.game.unit import TicketError, parse_ticket
from pharaon.pool.merkle import verify_proof

_HEX = frozenset("0123456789abcdef")


class ProofError(ValueError):
    """A proof that is malformed, or that does not prove what it claims."""


@dataclass(frozen=True, slots=True)
class CheckedProof:
    """A good proof: unit ``serial`` of the block of root ``merkle_root`` wins ``lot_cents``."""

    play_id: int | None
    serial: int
    lot_cents: int
    merkle_root: str


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    if name not in data:
        raise ProofError(f"proof: missing field {name!r}")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProofError(f"proof: {name} must be a {kind.__name__}, got {value!r}"[:200])
    return value


def _hash(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or not set(value) <= _HEX:
        raise ProofError(f"proof: {where} must be 64 lowercase hex digits, got {value!r}"[:200])
    return value


def check_proof(data: Any, *, root: str | None = None) -> CheckedProof:
    """Check a parsed proof; raise :class:`ProofError` saying what is wrong. ``root``: the root
    published for the block (``GET /api/v1/blocks``), if the proof's own must equal it."""
    if not isinstance(data, dict):
        raise ProofError("proof: expected a JSON object")
    serial = _field(data, "serial", int)
    ticket = _field(data, "ticket", str)
    lot = _field(data, "lot_cents", int)
    price = _field(data, "price_cents", int)
    merkle_root = _hash(_field(data, "merkle_root", str), "merkle_root")
    steps = _field(data, "path", list)
    play_id = data.get("play_id")
    path: list[tuple[str, str]] = []
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or step.get("side") not in ("L", "R"):
            raise ProofError(f"proof: path step {number} must be {{'side': 'L'|'R', 'hash': hex}}")
        path.append((step["side"], _hash(step.get("hash"), f"path step {number} hash")))
    if not 1 <= serial < 2**32 or not 0 <= lot < 2**63:
        raise ProofError(f"proof: serial {serial} or lot_cents {lot} out of range")
    try:
        won = evaluate(parse_ticket(ticket), price).prize_cents
    except (TicketError, MalformedUnitError, ValueError) as exc:
        raise ProofError(f"proof: bad ticket or price: {exc}") from exc
    if won != lot:
        raise ProofError(f"proof: the ticket wins {won} cents at {price}, not lot_cents {lot}")
    if not verify_proof(merkle_root, serial, ticket, lot, path):
        raise ProofError(
            f"proof: unit {serial} does not lead to root {merkle_root[:16]}…: "
            "it is not in the block"
        )
    if root is not None and root.lower() != merkle_root:
        raise ProofError(f"proof: its root {merkle_root[:16]}… is not the published {root[:16]}…")
    return CheckedProof(play_id if isinstance(play_id, int) else None, serial, lot, merkle_root)
