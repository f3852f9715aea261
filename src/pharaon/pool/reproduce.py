"""Reproducing a closed block from its revealed keys: regenerate it from the vendor's and the
operator's keys, its identity and its design, and compare its units SHA-256 and Merkle root
with the published ones (docs/proofs.md, « Keys revealed at close »).

The keys are checked against the published commitments first, and the design's digest against
the manifest's when it is known: either mismatch says at once why the block cannot come out
the same, without the minutes a million-unit block takes to make.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pharaon.pool.blockfile import Block, Manifest
from pharaon.pool.design import Design, default_design, test_design
from pharaon.pool.generate import generate_block
from pharaon.pool.keys import commitment
from pharaon.pool.layout import Progress


class NotReproducedError(Exception):
    """The keys or the design do not make the published block; one line says why."""


@dataclass(frozen=True, slots=True)
class Published:
    """What is published of a block: its identity and its commitments (``design_digest`` and
    ``design_name`` None when the source does not say them)."""

    emission: str
    block_number: int
    price_cents: int
    block_size: int
    test: bool
    units_sha256: str
    merkle_root: str
    vendor_key_commitment: str | None
    operator_key_commitment: str | None
    design_name: str | None = None
    design_digest: str | None = None

    @classmethod
    def of_manifest(cls, manifest: Manifest) -> Published:
        return cls(
            emission=manifest.emission,
            block_number=manifest.block_number,
            price_cents=manifest.price_cents,
            block_size=manifest.block_size,
            test=manifest.test,
            units_sha256=manifest.units_sha256,
            merkle_root=manifest.merkle_root,
            vendor_key_commitment=manifest.vendor_key_commitment,
            operator_key_commitment=manifest.operator_key_commitment,
            design_name=manifest.design_name or None,
            design_digest=manifest.design_digest or None,
        )

    @classmethod
    def of_api(cls, block: dict[str, Any], keys: dict[str, Any] | None) -> Published:
        """From a block of ``GET /api/v1/blocks`` and, if published, its keys' answer
        (``GET /api/v1/audit/blocks/{id}/keys``, which names the design); ``ValueError`` naming
        a field missing or of the wrong type."""

        def field(data: dict[str, Any], name: str, kind: type, optional: bool = False) -> Any:
            value = data.get(name)
            if value is None and optional:
                return None
            if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
                raise ValueError(f"the server's {name} is not a {kind.__name__}: {value!r}")
            return value

        return cls(
            emission=field(block, "emission", str),
            block_number=field(block, "block_number", int),
            price_cents=field(block, "price_cents", int),
            block_size=field(block, "block_size", int),
            test=field(block, "test", bool),
            units_sha256=field(block, "units_sha256", str),
            merkle_root=field(block, "merkle_root", str),
            vendor_key_commitment=field(block, "vendor_key_commitment", str, optional=True),
            operator_key_commitment=field(block, "operator_key_commitment", str, optional=True),
            design_name=None if keys is None else field(keys, "design_name", str),
            design_digest=None if keys is None else field(keys, "design_digest", str),
        )


def design_for(published: Published, design: Design | None = None) -> Design:
    """``design``, or the one the block most likely was made from: the regulation's, or for
    a test block the test design of its size (:func:`pharaon.pool.design.test_design`)."""
    if design is not None:
        return design
    return test_design(published.block_size) if published.test else default_design()


def check_keys(published: Published, *, vendor_key: bytes, operator_key: bytes) -> None:
    """Raise :class:`NotReproducedError` unless each key's SHA-256 is the block's published
    commitment (or the block has none)."""
    for who, key, committed in (
        ("vendor", vendor_key, published.vendor_key_commitment),
        ("operator", operator_key, published.operator_key_commitment),
    ):
        if committed is not None and commitment(key) != committed:
            raise NotReproducedError(
                f"the {who} key is not the block's: its SHA-256 is {commitment(key)}, the "
                f"block's commitment {committed}"
            )


def check_design(published: Published, design: Design) -> None:
    """Raise :class:`NotReproducedError` if ``design`` cannot make the block: another size, or
    (when the block's design digest is known) another digest."""
    if design.block_size != published.block_size:
        raise NotReproducedError(
            f"the design {design.name} makes blocks of {design.block_size:,} units, the block "
            f"has {published.block_size:,}"
        )
    if published.design_digest is not None and design.digest != published.design_digest:
        raise NotReproducedError(
            f"the design {design.name} (digest {design.digest}) is not the block's "
            f"{published.design_name} (digest {published.design_digest}): give its design "
            "with --design"
        )


def reproduce(
    published: Published,
    *,
    vendor_key: bytes,
    operator_key: bytes,
    design: Design,
    progress: Progress | None = None,
) -> Block:
    """Regenerate the block ``published`` says from the keys and ``design`` and return it;
    raise :class:`NotReproducedError` (one line) if a key, the design, the units SHA-256 or the
    Merkle root is not the published one."""
    check_keys(published, vendor_key=vendor_key, operator_key=operator_key)
    check_design(published, design)
    block = generate_block(
        published.price_cents,
        emission=published.emission,
        block_number=published.block_number,
        vendor_key=vendor_key,
        operator_key=operator_key,
        design=design,
        progress=progress,
    )
    made = block.manifest
    differ = [
        f"{name} {got} (published {want})"
        for name, got, want in (
            ("units SHA-256", made.units_sha256, published.units_sha256),
            ("Merkle root", made.merkle_root, published.merkle_root),
        )
        if got != want
    ]
    if differ:
        raise NotReproducedError(
            f"the regenerated block differs: {'; '.join(differ)} (design {design.name}, "
            f"generator {made.generator_version})"
        )
    return block
