"""``operators add``: operator accounts, and the ``--as EMAIL`` the operator commands take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pharaon.cli.app import Group, app, fail
from pharaon.cli.database import database_url_option, session_for, settings_for

# The server's layers are imported by the commands (cli/database.py): the CLI starts lean.
if TYPE_CHECKING:
    from sqlalchemy.orm import Session

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


def acting(session: Session, as_email: str | None, *, admin: bool) -> str:
    """The audit actor for a CLI action ``--as`` ``as_email``; fails (one line) when the
    operator is unknown, missing while operators exist, or not an admin when ``admin``."""
    from sqlalchemy import select

    from pharaon.service import operators
    from pharaon.service.errors import ServiceError
    from pharaon.store.tables import Operator

    try:
        if as_email is None:
            if session.execute(select(Operator.id).limit(1)).first() is not None:
                fail("operators exist: say who you are with --as EMAIL")
            return ANONYMOUS
        current = operators.by_email(session=session, email=as_email)
        if admin:
            operators.require_admin(current)
    except ServiceError as exc:
        fail(exc.detail)
    finally:
        session.rollback()
    return current.actor


@operators_app.command("add")
@click.argument("email", help="The operator's e-mail (their log-in name).")
@click.option("--role", required=True, help="admin (reads and acts) or analyst (reads).")
@as_operator_option
@database_url_option
def operators_add(email: str, role: str, as_email: str | None, database_url: str | None) -> None:
    """Add an operator; the password is asked (never in argv) and the TOTP secret shown once."""
    from pharaon.service import operators, sealing
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    password: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    settings = settings_for(database_url)
    with session_for(settings) as session:
        actor = acting(session, as_email, admin=True)
        try:
            created = operators.add(
                sealer=sealing.load(settings.keys_dir),
                session=session,
                email=email,
                password=password,
                role=role,
                actor=actor,
                now=utcnow(),
            )
        except ServiceError as exc:
            session.rollback()
            fail(exc.detail)
        session.commit()
    click.echo(f"operator {created.email} added ({created.role})")
    click.echo("Add this to an authenticator app now; it is not shown again:")
    click.echo(f"  secret: {created.totp_secret}")
    click.echo(f"  uri:    {created.provisioning_uri}")


@app.command("export-sales")
@click.option(
    "--from", "since", type=click.DateTime(["%Y-%m-%d"]), required=True, help="First day."
)
@click.option("--to", "until", type=click.DateTime(["%Y-%m-%d"]), required=True, help="Last day.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="An empty or new folder for the files.",
)
@as_operator_option
@database_url_option
def export_sales(
    since: datetime, until: datetime, out: Path, as_email: str | None, database_url: str | None
) -> None:
    """Plays, ledger entries and audit records of the days (UTC) as CSV and Parquet, with a
    manifest of SHA-256 per file; for the regulator."""
    from pharaon.service import exports
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    start = since.replace(tzinfo=UTC)
    end = until.replace(tzinfo=UTC) + timedelta(days=1)
    settings = settings_for(database_url)
    with session_for(settings) as session:
        actor = acting(session, as_email, admin=False)
        try:
            done = exports.export_audited(
                session=session, since=start, until=end, out=out, actor=actor, now=utcnow()
            )
        except ServiceError as exc:
            fail(exc.detail)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror}")
        session.commit()
    rows = ", ".join(f"{n} {table}" for table, n in done.rows.items())
    click.echo(f"exported {rows} to {out}")
