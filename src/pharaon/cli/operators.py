"""``operators add``: operator accounts, and the ``--as EMAIL`` the operator commands take."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pharaon.cli.app import Group, app, fail
from pharaon.cli.database import database_for, database_url_option, settings_for

# The server's layers are imported by the commands (cli/database.py): the CLI starts lean.
if TYPE_CHECKING:
    from pharaon.store.transactions import Transactions

operators_app = Group("operators", help="Back-office operators: add.", no_args_is_help=True)
app.add_command(operators_app)

# Before the first operator exists there is nobody to name: the CLI acts as itself.
ANONYMOUS = "operator:cli"

as_operator_option = click.option(
    "--as",
    "as_email",
    help="The operator (e-mail) doing this, named in the audit log; required once an "
    "operator exists.",
)


def acting(db: Transactions, as_email: str | None, *, admin: bool, auditor: bool = False) -> str:
    """The audit actor for a CLI action ``--as`` ``as_email``; fails (one line) when the
    operator is unknown, missing while operators exist (or at all when ``auditor``), or not an
    admin when ``admin``, not an auditor when ``auditor``."""
    from pharaon.service import operators
    from pharaon.service.errors import ServiceError

    if as_email is None and auditor:
        fail("only an auditor may do this: say who you are with --as EMAIL")
    if as_email is None:
        if db.read(operators.any_operator):
            fail("operators exist: say who you are with --as EMAIL")
        return ANONYMOUS
    try:
        current = db.read(operators.by_email, email=as_email)
        if admin:
            operators.require_admin(current)
        if auditor:
            operators.require_auditor(current)
    except ServiceError as exc:
        fail(exc.detail)
    return current.actor


@operators_app.command("add")
@click.argument("email", help="The operator's e-mail (their log-in name).")
@click.option(
    "--role",
    required=True,
    help="admin (reads and acts), analyst (reads) or auditor (reads, approves blocks for sale).",
)
@as_operator_option
@database_url_option
def operators_add(email: str, role: str, as_email: str | None, database_url: str | None) -> None:
    """Add an operator; the password is asked (never in argv) and the TOTP secret shown once."""
    from pharaon.service import operators, passwords, sealing
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    password: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=True)
        try:
            address = operators.check_new(email=email, password=password, role=role)
            created = db.write(
                operators.add,
                sealer=sealing.load(settings.keys_dir, create=True),
                email=address,
                password_hash=passwords.hash_password(password),
                role=role,
                actor=actor,
                now=utcnow(),
            )
        except ServiceError as exc:
            fail(exc.detail)
    click.echo(f"operator {created.email} added ({created.role})")
    click.echo("Add this to an authenticator app now; it is not shown again:")
    click.echo(f"  secret: {created.totp_secret}")
    click.echo(f"  uri:    {created.provisioning_uri}")


def _export_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options of a regulator's export: the UTC days ``--from`` and ``--to`` (both
    included), the folder ``--out``, ``--as`` and ``--database-url``."""
    for option in reversed(
        (
            click.option(
                "--from",
                "since",
                type=click.DateTime(["%Y-%m-%d"]),
                required=True,
                help="First day (UTC).",
            ),
            click.option(
                "--to",
                "until",
                type=click.DateTime(["%Y-%m-%d"]),
                required=True,
                help="Last day (UTC).",
            ),
            click.option(
                "--out",
                type=click.Path(path_type=Path),
                required=True,
                help="An empty or new folder for the files.",
            ),
            as_operator_option,
            database_url_option,
        )
    ):
        command = option(command)
    return command


def _period(since: datetime, until: datetime) -> tuple[datetime, datetime]:
    """The UTC instants from the first day's midnight to the midnight after the last day."""
    try:
        return since.replace(tzinfo=UTC), until.replace(tzinfo=UTC) + timedelta(days=1)
    except OverflowError:
        fail(f"--to {until:%Y-%m-%d} is the last day a date can hold: give an earlier one")


@app.command("export-sales")
@_export_options
def export_sales(
    since: datetime, until: datetime, out: Path, as_email: str | None, database_url: str | None
) -> None:
    """Plays, ledger entries and audit records of the days (UTC) as CSV and Parquet, with a
    manifest of SHA-256 per file; for the regulator."""
    from pharaon.service import exports
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    start, end = _period(since, until)
    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=False)
        try:
            done = db.read(exports.export_period, since=start, until=end, out=out)
        except ServiceError as exc:
            fail(exc.detail)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror}")
        db.write(
            exports.record_export, exported=done, since=start, until=end, actor=actor, now=utcnow()
        )
    rows = ", ".join(f"{n} {table}" for table, n in done.rows.items())
    click.echo(f"exported {rows} to {out}")


@app.group("trace")
def trace() -> None:
    """The regulator's trace of the gaming events (docs/traces.md)."""


@trace.command("export")
@_export_options
def trace_export(
    since: datetime, until: datetime, out: Path, as_email: str | None, database_url: str | None
) -> None:
    """The gaming events of the days as JSON Lines, with their JSON Schema and a manifest of
    SHA-256 per file; the export itself is an audit record."""
    from pharaon.service import traces
    from pharaon.service.clock import utcnow

    start, end = _period(since, until)
    if end <= start:
        fail(f"--to {until:%Y-%m-%d} is before --from {since:%Y-%m-%d}")
    settings = settings_for(database_url)
    with database_for(settings) as db:
        actor = acting(db, as_email, admin=False)
        try:
            manifest = db.read(
                traces.export,
                folder=out,
                operator=settings.operator_id,
                since=start,
                until=end,
            )
        except FileExistsError:
            fail(f"{out} is not empty: give a new or empty folder")
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror}")
        db.write(traces.record_export, manifest=manifest, actor=actor, now=utcnow())
    click.echo(f"exported {manifest['events']} events to {out}")
