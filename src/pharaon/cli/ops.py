"""Operator commands: ``db upgrade``, ``blocks load/approve/list/deactivate``, ``serve``,
``audit``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pharaon.cli.app import Group, app, fail
from pharaon.cli.database import database_for, database_url_option, settings_for
from pharaon.cli.operators import acting, as_operator_option
from pharaon.cli.progress import prefixed, progress_display
from pharaon.game.money import format_cents

# The server's layers (SQLAlchemy, the services) are imported by the commands that use them, so
# that `pharaon verify` and the other block commands start without them.
if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from pharaon.settings import Settings
    from pharaon.store.transactions import Transactions

db_app = Group("db", help="The database: schema migrations.", no_args_is_help=True)
blocks_app = Group(
    "blocks", help="Blocks of game units: load, approve, list, deactivate.", no_args_is_help=True
)
app.add_command(db_app)
app.add_command(blocks_app)
# An approval refused (no such block, a copy that differs, a failed verification): nothing
# changed.
REFUSED = 1


@db_app.command("upgrade")
@database_url_option
@click.option(
    "--create",
    is_flag=True,
    help="Make the SQLite database if it is not there (else a missing file is an error).",
)
def db_upgrade(database_url: str | None, create: bool) -> None:
    """Create or migrate the database schema to the newest revision."""
    settings = settings_for(database_url)
    with database_for(settings, migrate=True, create=create):
        click.echo("database schema is current")


@blocks_app.command("load")
@click.argument(
    "file", type=click.Path(path_type=Path), help="A block file (Parquet) from the block factory."
)
@as_operator_option
@database_url_option
def blocks_load(file: Path, as_email: str | None, database_url: str | None) -> None:
    """Verify a block file and load it; refuses one that fails or is already loaded."""
    from pharaon.service import loading
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    settings = settings_for(database_url)
    with database_for(settings) as db, progress_display() as progress:
        actor = acting(db, as_email, admin=True)
        try:
            block_id = db.write(
                loading.load_block_file,
                path=file,
                allow_test=settings.allow_test_blocks,
                actor=actor,
                now=utcnow(),
                progress=progress,
                sale_runs=settings.sale_runs,
            )
        except ServiceError as exc:
            fail(exc.detail)
    click.echo(f"loaded block {block_id}")
    click.echo(
        f"it goes on sale once an auditor approves it: pharaon blocks approve {block_id} "
        "--as AUDITOR_EMAIL",
        err=True,
    )


@blocks_app.command("approve")
@click.argument("block_id", type=int, help="The loaded block's id (see `blocks list`).")
@click.option(
    "--file",
    type=click.Path(path_type=Path),
    help="The auditor's own copy of the block file: verified, and its units SHA-256 and "
    "Merkle root checked against the loaded block's.",
)
@as_operator_option
@database_url_option
def blocks_approve(
    block_id: int, file: Path | None, as_email: str | None, database_url: str | None
) -> None:
    """As an auditor (not the operator who loaded it): verify a loaded block's stored units
    and approve it for sale; the approval and its figures go to the audit log."""
    from pharaon.service import approvals, blocks
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=False, auditor=True)
        loaded = {b.block_id: b for b in db.read(blocks.published_blocks)}.get(block_id)
        if loaded is None:
            fail(f"no block with id {block_id}", REFUSED)
        if file is not None:
            _check_copy(file, loaded.units_sha256, loaded.merkle_root, block_id)
        try:
            figures = db.read(approvals.verify_loaded, block_id=block_id)
            state = db.write(
                approvals.approve, block_id=block_id, actor=actor, figures=figures, now=utcnow()
            )
        except ServiceError as exc:
            fail(exc.detail, REFUSED)
    on_sale = "on sale" if state == "open" else "next on sale at its price"
    click.echo(f"block {block_id} approved ({on_sale}): {figures.summary}")


def _check_copy(file: Path, units_sha256: str, merkle_root: str, block_id: int) -> None:
    """Fail (one line) unless the block file ``file`` passes verification and holds the units
    of the loaded block (its units SHA-256 and Merkle root)."""
    from pharaon.pool.blockfile import BlockFileError, read_block
    from pharaon.pool.verify import verify_block

    try:
        block = read_block(file)
    except BlockFileError as exc:
        fail(f"{file}: {exc}", REFUSED)
    with progress_display() as progress:
        report = verify_block(block, progress=progress)
    if not report.ok:
        fail(f"{file} fails verification: {report.problems[0]}", REFUSED)
    m = block.manifest
    if (m.units_sha256, m.merkle_root) != (units_sha256, merkle_root):
        fail(
            f"{file} is not loaded block {block_id}: its units SHA-256 or Merkle root differs "
            "from the loaded block's",
            REFUSED,
        )


@blocks_app.command("list")
@database_url_option
def blocks_list(database_url: str | None) -> None:
    """The blocks: state (a loaded one awaiting an auditor's approval said so), units sold,
    remaining lots by amount."""
    from rich.console import Console
    from rich.table import Table

    from pharaon.service import blocks

    settings = settings_for(database_url)
    with database_for(settings) as db:
        found = db.read(blocks.list_blocks)
    table = Table("id", "block", "price", "state", "sold", "remaining lots")
    for b in found:
        lots = ", ".join(f"{n}×{format_cents(lot)}" for lot, n in b.remaining_lots)
        name = f"{b.emission}/{b.block_number}" + (" (test)" if b.is_test else "")
        state = b.state if b.deactivation_reason is None else f"{b.state}: {b.deactivation_reason}"
        if b.state == "loaded" and b.approved_by is None:
            state = "loaded, awaiting approval"
        table.add_row(
            str(b.block_id),
            name,
            format_cents(b.price_cents),
            state,
            f"{b.sold:,}/{b.block_size:,}",
            lots,
        )
    Console(width=200).print(table)


@blocks_app.command("deactivate")
@click.argument("block_id", type=int, help="The block's id (see `blocks list`).")
@click.option("--reason", required=True, help="Why; written to the audit log.")
@as_operator_option
@database_url_option
def blocks_deactivate(
    block_id: int, reason: str, as_email: str | None, database_url: str | None
) -> None:
    """Stop a block's sales (logged); its past plays stay untouched."""
    from pharaon.service import blocks
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=True)
        try:
            db.write(blocks.deactivate, block_id=block_id, reason=reason, actor=actor, now=utcnow())
        except ServiceError as exc:
            fail(exc.detail)
    click.echo(f"block {block_id} deactivated")


def _published(path: Path) -> list[tuple[int, str]] | str:
    """(seq, sha256) of the checkpoints in ``path``, as GET /api/v1/audit/checkpoints gives
    them; or the file's text if it is not JSON but signed notes (GET /api/v1/audit/checkpoint,
    one after the other); the command fails with one line if the file is neither."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"{path} is not text: {exc}")
    if not text.lstrip().startswith(("[", "{")):
        return text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{path} is not JSON: {exc}")
    out = []
    for item in data if isinstance(data, list) else [None]:
        seq = item.get("seq") if isinstance(item, dict) else None
        digest = item.get("sha256") if isinstance(item, dict) else None
        if type(seq) is not int or not isinstance(digest, str) or len(digest) != 64:
            fail(f"{path}: expected a list of {{'seq': int, 'sha256': hex}}, got {item!r}"[:200])
        out.append((seq, digest))
    return out


@app.command("audit")
@database_url_option
@click.option("--head", is_flag=True, help="Only print the audit chain's head (seq and hash).")
@click.option(
    "--checkpoints",
    type=click.Path(path_type=Path),
    help="Checkpoints kept outside to check: the JSON of GET /api/v1/audit/checkpoints, or "
    "signed checkpoints (GET /api/v1/audit/checkpoint, a witness's), one after the other.",
)
@click.option(
    "--log-key",
    help="The verifier key the signed checkpoints must hold (GET /api/v1/audit/key's "
    "verifier_key); default: the key folder's checkpoints.key.",
)
def audit_command(
    database_url: str | None, head: bool, checkpoints: Path | None, log_key: str | None
) -> None:
    """Check the ledger, balances, pending lots, units against plays, block sizes, the audit
    chain (which must pass through every checkpoint) and its Merkle tree (whose root must be
    every signed checkpoint's, their signatures checked)."""
    from pharaon.service import audit

    settings = settings_for(database_url)
    published = [] if checkpoints is None else _published(checkpoints)
    signed = []
    if isinstance(published, str):
        signed, published = _signed(published, settings, log_key), []
    with database_for(settings) as db:
        if head:
            seq, digest = db.read(audit.head)
            click.echo(f"audit chain head: seq {seq} sha256 {digest}")
            return
        # One snapshot: the checks agree with each other while sales go on.
        report = db.read(audit.run_audit, published=published, signed=signed)
    for check in report.checks:
        click.echo(f"{'ok  ' if check.passed else 'FAIL'}  {check.name}: {check.detail}")
    if not report.ok:
        fail("audit failed: " + "; ".join(report.failures), code=1)


def _signed(text: str, settings: Settings, log_key: str | None) -> list[tuple[int, str]]:
    """(tree size, root hex) of the signed checkpoints in ``text``, each signed by the log's
    key (``log_key``, else the key folder's) and cosigned by the known witnesses whose lines
    it has; the command fails with one line if one is not."""
    from pharaon.pool import notes
    from pharaon.pool.keys import SeedKeyError
    from pharaon.service import transparency

    try:
        if log_key is not None:
            verifier = notes.parse_vkey(log_key)
        else:
            signer = transparency.load(settings.keys_dir, settings.log_origin)
            if signer is None:
                fail("give --log-key: the key folder has no checkpoints.key to check them with")
            verifier = signer.verifier
        witnesses = transparency.witness_keys(settings.witness_keys)
        found = transparency.check_published(text, log_key=verifier, witnesses=witnesses)
    except (notes.NoteError, SeedKeyError) as exc:
        fail(f"bad signed checkpoint: {exc}", code=1)
    return [(c.size, c.root) for c in found]


def _check_keys(db: Transactions, settings: Settings) -> None:
    """Stop the start with one line if a key file of the key folder can be read by others, if
    the receipts' key cannot be read or made, or if the operators could not log in: their TOTP
    secrets do not open with the key folder's file (a wrong PHARAON_KEYS_DIR)."""
    from pharaon.pool.keys import SeedKeyError, check_key_folder
    from pharaon.pool.notes import NoteError
    from pharaon.service import operators, receipts, sealing, transparency

    try:
        check_key_folder(settings.keys_dir)
    except SeedKeyError as exc:
        fail(str(exc))

    problem: sealing.SealingError | None = None
    try:
        sealer: sealing.Sealer | None = sealing.load(settings.keys_dir)
    except sealing.SealingError as exc:
        sealer, problem = None, exc  # it matters only if there are operators
    try:
        db.read(operators.check_sealer, sealer=sealer)
    except sealing.SealingError as exc:
        fail((problem or exc).detail)
    try:
        receipts.load(settings.keys_dir)  # a receipts' key there must be readable
        transparency.load(settings.keys_dir, settings.log_origin)  # and a checkpoint key
        transparency.witness_keys(settings.witness_keys)
    except SeedKeyError as exc:
        fail(str(exc))
    except NoteError as exc:
        fail(f"PHARAON_WITNESS_KEYS: {exc}")


def _say_without_receipts(settings: Settings) -> None:
    """Warn, at a start, a server with no receipts' key: it sells without signed receipts;
    or no checkpoint key: it publishes no signed checkpoint."""
    from pharaon.service import receipts, transparency

    path = settings.keys_dir / receipts.KEY_FILE
    if not path.exists():
        click.echo(
            f"warning: no receipts' key {path}: purchases carry no signed receipt; copy it "
            f"from the key folder of the first start, or make one: pharaon keys new --out {path}",
            err=True,
        )
    path = settings.keys_dir / transparency.KEY_FILE
    if not path.exists():
        click.echo(
            f"warning: no checkpoint key {path}: the audit log's checkpoints are not signed; "
            f"copy it from the key folder of the first start, or make one: pharaon keys new "
            f"--out {path}",
            err=True,
        )


def _first_start(db: Transactions, settings: Settings) -> None:
    """On an empty database, generate and load one block per price, so there is a game; the
    keys are kept in files under ``settings.keys_dir``, so the blocks can be made again. Once
    per deployment: a server that starts beside another waits, then finds the blocks loaded."""
    from pharaon.service import loading
    from pharaon.service.errors import ServiceError

    if not db.read(loading.has_blocks):
        try:
            db.write(_load_first_blocks, settings=settings)
        except ServiceError as exc:  # a generator's or a design's fault: nothing is kept
            fail(f"first start: {exc.detail}", code=1)


def _load_first_blocks(*, session: Session, settings: Settings) -> None:
    from pharaon.game.rules import rules
    from pharaon.pool.generate import generate_block
    from pharaon.service import approvals, loading, receipts, transparency
    from pharaon.service.clock import utcnow

    if not loading.begin_first_start(session=session):
        return  # another server loaded them while this one waited
    click.echo("first start: generating one block per price (this takes a while)", err=True)
    vendor, operator = _first_start_keys(settings.keys_dir)
    receipts.load(settings.keys_dir, create=True)  # the one every server signs receipts with
    # and the one every server signs the audit log's checkpoints with
    transparency.load(settings.keys_dir, settings.log_origin, create=True)
    with progress_display() as progress:
        for price in rules().prices_cents:
            shown = prefixed(progress, f"{format_cents(price)} ")
            block = generate_block(price, vendor_key=vendor, operator_key=operator, progress=shown)
            block_id = loading.load_block(
                session=session,
                block=block,
                allow_test=settings.allow_test_blocks,
                actor="operator:first-start",
                now=utcnow(),
                progress=shown,
                sale_runs=settings.sale_runs,
            )
            # The demo's one exception to an auditor's sign-off (docs/operations.md): the
            # server verifies its own first blocks and approves them, under its own name.
            approvals.verify_and_approve(
                session=session, block_id=block_id, actor="auditor:first-start", now=utcnow()
            )


def _first_start_keys(folder: Path) -> tuple[bytes, bytes]:
    """The vendor and operator keys in ``folder``, made there (mode 0600) if missing."""
    from pharaon.pool.keys import SeedKeyError, commitment, new_key, read_key_file, write_key_file

    keys = []
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for who in ("vendor", "operator"):
            path = folder / f"{who}.key"
            if not path.exists():
                write_key_file(path, new_key())
                click.echo(f"first start: wrote the {who} key to {path} (mode 0600)", err=True)
            keys.append(read_key_file(path, who))
    except SeedKeyError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot make the key folder {folder}: {exc.strerror}")
    for who, key in zip(("vendor", "operator"), keys, strict=True):
        click.echo(f"first start: {who} key commitment {commitment(key)}", err=True)
    return keys[0], keys[1]


@app.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on.",
)
@database_url_option
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes.",
)
@click.option(
    "--first-start/--no-first-start",
    default=True,
    show_default=True,
    help="On an empty database, generate one block per price.",
)
@click.option(
    "--forwarded-allow-ips",
    default="",
    help="Proxies (addresses, comma-separated, or *) whose X-Forwarded-* count.",
)
def serve(  # noqa: PLR0917 (click passes its options by name)
    host: str,
    port: int,
    database_url: str | None,
    workers: int,
    first_start: bool,
    forwarded_allow_ips: str,
) -> None:
    """Migrate the database, load blocks on a first start, and serve the API and the page."""
    settings = settings_for(database_url)
    with database_for(settings, migrate=True) as db:
        _check_keys(db, settings)
        if first_start:
            _first_start(db, settings)
    _say_without_receipts(settings)
    # Replace this process by the server (pharaon.web.serve): the workers start lean (no
    # block factory, no numba) and read their settings, the database URL included, from the
    # environment.
    os.environ["PHARAON_DATABASE_URL"] = settings.database_url
    click.echo(f"serving on http://{host}:{port}/ (API docs at /api/docs)", err=True)
    sys.stderr.flush()
    sys.stdout.flush()
    argv = [sys.executable, "-m", "pharaon.web.serve"]
    argv += ["--host", host, "--port", str(port), "--workers", str(workers)]
    argv += ["--forwarded-allow-ips", forwarded_allow_ips]
    os.execv(sys.executable, argv)
