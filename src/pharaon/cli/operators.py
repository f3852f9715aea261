"""``operators add``: operator accounts, and the ``--as EMAIL`` the operator commands take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pharaon.cli.app import app, fail
from pharaon.cli.database import DatabaseUrl, session_for, settings_for

# The server's layers are imported by the commands (cli/database.py): the CLI starts lean.
if TYPE_CHECKING:
    from sqlalchemy.orm import Session

operators_app = typer.Typer(help="Back-office operators: add.", no_args_is_help=True)
app.add_typer(operators_app, name="operators")

# Before the first operator exists there is nobody to name: the CLI acts as itself.
ANONYMOUS = "operator:cli"

AsOperator = Annotated[
    str | None,
    typer.Option(
        "--as",
        help="The operator (e-mail) doing this, named in the audit log; required once an "
        "operator exists.",
    ),
]


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
def operators_add(
    email: Annotated[str, typer.Argument(help="The operator's e-mail (their log-in name).")],
    role: Annotated[str, typer.Option("--role", help="admin (reads and acts) or analyst (reads).")],
    as_email: AsOperator = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Add an operator; the password is asked (never in argv) and the TOTP secret shown once."""
    from pharaon.service import operators, sealing
    from pharaon.service.clock import utcnow
    from pharaon.service.errors import ServiceError

    password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
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
    typer.echo(f"operator {created.email} added ({created.role})")
    typer.echo("Add this to an authenticator app now; it is not shown again:")
    typer.echo(f"  secret: {created.totp_secret}")
    typer.echo(f"  uri:    {created.provisioning_uri}")


@app.command("export-sales")
def export_sales(
    since: Annotated[datetime, typer.Option("--from", formats=["%Y-%m-%d"], help="First day.")],
    until: Annotated[datetime, typer.Option("--to", formats=["%Y-%m-%d"], help="Last day.")],
    out: Annotated[Path, typer.Option("--out", help="An empty or new folder for the files.")],
    as_email: AsOperator = None,
    database_url: DatabaseUrl = None,
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
    typer.echo(f"exported {rows} to {out}")
