"""`pharaon reproduce`: regenerate a closed block from its revealed keys and compare it with
what the server published (docs/proofs.md, « Keys revealed at close »).

The block's identity and commitments come from the server (``GET /api/v1/blocks``, and the
design's digest from ``GET /api/v1/audit/blocks/{id}/keys`` once the keys are published) or
from its manifest (``--manifest``); the keys from their files. Exit 0 and one line when the
regenerated units SHA-256 and Merkle root are the published ones; 1 and one line saying what
differs; 2 and one line for input that cannot be used (a file, the server, an option).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pharaon.cli.app import app, fail
from pharaon.cli.progress import progress_display
from pharaon.game.money import format_cents
from pharaon.pool.blockfile import BlockFileError, Manifest
from pharaon.pool.design import DesignError, load_design
from pharaon.pool.keys import SeedKeyError, read_key_file

if TYPE_CHECKING:
    from pharaon.pool.reproduce import Published

NOT_REPRODUCED = 1
_TIMEOUT = 30.0
_API = "/api/v1"


def _get(server: str, path: str) -> Any | None:
    """The JSON the server answers ``path`` with; None for a 404; fails with one line for
    anything else."""
    try:
        with urllib.request.urlopen(server + _API + path, timeout=_TIMEOUT) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        fail(f"the server answered {path} with HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        fail(f"cannot ask the server for {path}: {getattr(exc, 'reason', exc)}")
    try:
        return json.loads(body)
    except ValueError:
        fail(f"the server's answer to {path} is not JSON")


def _from_server(server: str, block_id: int) -> Published:
    from pharaon.pool.reproduce import Published  # here: the block factory loads numba

    if not server.startswith(("http://", "https://")):
        fail(f"--server must start with http:// or https://, got {server!r}")
    server = server.rstrip("/")
    listed = _get(server, "/blocks")
    if not isinstance(listed, list):
        fail("the server's /blocks is not a list")
    found = [b for b in listed if isinstance(b, dict) and b.get("block_id") == block_id]
    if not found:
        fail(f"the server publishes no block {block_id}")
    keys = _get(server, f"/audit/blocks/{block_id}/keys")
    try:
        return Published.of_api(found[0], keys if isinstance(keys, dict) else None)
    except ValueError as exc:
        fail(str(exc))


def _from_manifest(path: Path) -> Published:
    from pharaon.pool.reproduce import Published

    try:
        return Published.of_manifest(Manifest.from_json(json.loads(path.read_text("utf-8"))))
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        fail(f"{path} is not JSON")
    except BlockFileError as exc:
        fail(f"{path}: {exc}")


@app.command("reproduce")
@click.option("--server", help="The pharaon server that published the block, e.g. https://…")
@click.option("--block", "block_id", type=click.IntRange(1), help="The block's id there.")
@click.option(
    "--manifest",
    type=click.Path(path_type=Path),
    help="The block's manifest (JSON), instead of --server and --block.",
)
@click.option(
    "--vendor-key-file",
    type=click.Path(path_type=Path),
    required=True,
    help="The vendor's key file, as revealed (hex, mode 0600).",
)
@click.option(
    "--operator-key-file",
    type=click.Path(path_type=Path),
    required=True,
    help="The operator's key file, as revealed (hex, mode 0600).",
)
@click.option(
    "--design",
    type=click.Path(path_type=Path),
    help="The block's design file (default: the packaged regulation one, or for a test block "
    "the test design of its size).",
)
def reproduce_command(  # noqa: PLR0917 (click passes its options by name)
    server: str | None,
    block_id: int | None,
    manifest: Path | None,
    vendor_key_file: Path,
    operator_key_file: Path,
    design: Path | None,
) -> None:
    """Regenerate a block from its vendor's and operator's keys and compare its units SHA-256
    and Merkle root with the published ones: exit 0 and one line, or 1 and what differs."""
    from pharaon.pool.reproduce import (
        NotReproducedError,
        check_design,
        check_keys,
        design_for,
        reproduce,
    )

    if manifest is not None and (server is not None or block_id is not None):
        fail("give --manifest, or --server and --block, not both")
    try:
        vendor = read_key_file(vendor_key_file, "vendor")
        operator = read_key_file(operator_key_file, "operator")
        plan = None if design is None else load_design(design)
    except (SeedKeyError, DesignError) as exc:
        fail(str(exc))
    if manifest is not None:
        published = _from_manifest(manifest)
        name = f"block {published.emission}/{published.price_cents}/{published.block_number}"
    elif server is not None and block_id is not None:
        published = _from_server(server, block_id)
        name = f"block {block_id}"
    else:
        fail("give --server and --block (or --manifest)")
    try:
        plan = design_for(published, plan)
    except DesignError as exc:
        fail(str(exc))
    try:
        check_keys(published, vendor_key=vendor, operator_key=operator)
        check_design(published, plan)
        shown = progress_display() if sys.stderr.isatty() else nullcontext(None)
        with shown as progress:
            made = reproduce(
                published, vendor_key=vendor, operator_key=operator, design=plan, progress=progress
            )
    except NotReproducedError as exc:
        fail(f"{name} not reproduced: {exc}", code=NOT_REPRODUCED)
    except ValueError as exc:  # the generator refused the identity or the design
        fail(f"{name} not reproduced: {exc}", code=NOT_REPRODUCED)
    m = made.manifest
    click.echo(
        f"{name} reproduced: {m.block_size:,} units at {format_cents(m.price_cents)}, emission "
        f"{m.emission} block {m.block_number}, design {m.design_name}, units SHA-256 "
        f"{m.units_sha256}, Merkle root {m.merkle_root}"
    )
