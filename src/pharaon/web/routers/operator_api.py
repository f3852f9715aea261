"""The back office's API under ``/operator/``: log-in with TOTP, and the blocks (an analyst
reads, an admin also deactivates), sales, players, the audit log and the regulator's export."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import asdict
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, UploadFile, status
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.background import BackgroundTask

from pharaon.service import (
    audit,
    audit_view,
    blocks,
    operators,
    player_view,
    sales_report,
    sealing,
    sessions,
)
from pharaon.service.clock import utcnow
from pharaon.service.errors import UnauthorizedError
from pharaon.web.deps import SessionDep, SettingsDep, shown
from pharaon.web.schemas import LimitsOut, SessionOut, _In

router = APIRouter(prefix="/operator", tags=["operator"])

OPERATOR_COOKIE = "pharaon_operator"
OPERATOR_CSRF_COOKIE = "pharaon_operator_csrf"


class OperatorLoginIn(_In):
    email: StrictStr = Field(max_length=254)
    password: StrictStr = Field(max_length=256)
    totp_code: StrictStr = Field(max_length=16)


class OperatorOut(BaseModel):
    operator_id: int
    email: str
    role: str


class BlockOut(BaseModel):
    block_id: int
    emission: str
    block_number: int
    price_cents: int
    block_size: int
    is_test: bool
    state: str
    sold: int
    remaining: int
    remaining_lots: list[tuple[int, int]]
    deactivation_reason: str | None


class DeactivateIn(_In):
    reason: StrictStr = Field(min_length=1, max_length=500)


def current_operator(
    request: Request, session: SessionDep, settings: SettingsDep
) -> operators.CurrentOperator:
    """The operator of the request's bearer token or cookie (with the CSRF header on changes)."""
    credentials = shown(request, OPERATOR_COOKIE, "not logged in as an operator")
    try:
        current = operators.authenticate(
            session=session,
            token=credentials.token,
            now=utcnow(),
            idle=timedelta(minutes=settings.session_idle_minutes),
        )
    except UnauthorizedError:
        session.commit()  # an idle session's deletion stays
        raise
    # Its own unit of work, ended on its thread: the route runs on another.
    session.commit()
    request.state.operator_id = current.operator_id  # for the access log (web/observe.py)
    sessions.check_csrf(
        credentials, current.csrf_token, "a change asked with the cookie must carry the csrf_token"
    )
    return current


CurrentOperatorDep = Annotated[operators.CurrentOperator, Depends(current_operator)]


def admin(current: CurrentOperatorDep) -> operators.CurrentOperator:
    """The current operator if an admin; 403 for an analyst."""
    return operators.require_admin(current)


AdminDep = Annotated[operators.CurrentOperator, Depends(admin)]


@router.post("/sessions")
def log_in(
    body: OperatorLoginIn,
    request: Request,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
) -> SessionOut:
    """Log in with e-mail, password and the authenticator's one-time code; locked out (429)
    after repeated failures, as players are."""
    try:
        created = operators.log_in(
            session=session,
            email=body.email,
            password=body.password,
            totp_code=body.totp_code,
            now=utcnow(),
            sealer=sealing.load(settings.keys_dir),
            client=request.client.host if request.client else None,
            max_failures=settings.lockout_failures,
            lockout=timedelta(minutes=settings.lockout_minutes),
            max_address_failures=settings.lockout_address_failures,
        )
    except UnauthorizedError:
        session.commit()  # the failure's count stays: it is what locks a guesser out
        raise
    secure = settings.cookie_secure
    response.set_cookie(
        OPERATOR_COOKIE, created.token, httponly=True, samesite="strict", path="/", secure=secure
    )
    response.set_cookie(
        OPERATOR_CSRF_COOKIE, created.csrf_token, samesite="strict", path="/", secure=secure
    )
    idle = timedelta(minutes=settings.session_idle_minutes)
    session.commit()
    return SessionOut(
        token=created.token, csrf_token=created.csrf_token, expires_at=created.created_at + idle
    )


@router.delete("/sessions/current", status_code=status.HTTP_204_NO_CONTENT)
def log_out(current: CurrentOperatorDep, session: SessionDep) -> Response:
    """End the operator's session."""
    operators.log_out(session=session, token_sha256=current.token_sha256)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    response.delete_cookie(OPERATOR_COOKIE, path="/", samesite="strict", httponly=True)
    response.delete_cookie(OPERATOR_CSRF_COOKIE, path="/", samesite="strict")
    session.commit()
    return response


@router.get("/me")
def me(current: CurrentOperatorDep) -> OperatorOut:
    """Who is logged in, and their role."""
    return OperatorOut(operator_id=current.operator_id, email=current.email, role=current.role)


@router.get("/blocks")
def list_blocks(_current: CurrentOperatorDep, session: SessionDep) -> list[BlockOut]:
    """Every block: state, sold and remaining units, remaining lots by amount."""
    found = [
        BlockOut(
            block_id=b.block_id,
            emission=b.emission,
            block_number=b.block_number,
            price_cents=b.price_cents,
            block_size=b.block_size,
            is_test=b.is_test,
            state=b.state,
            sold=b.sold,
            remaining=b.block_size - b.sold,
            remaining_lots=[(lot, n) for lot, n in b.remaining_lots],
            deactivation_reason=b.deactivation_reason,
        )
        for b in blocks.list_blocks(session=session)
    ]
    session.commit()
    return found


@router.post("/blocks/{block_id}/deactivate", status_code=status.HTTP_204_NO_CONTENT)
def deactivate(block_id: int, body: DeactivateIn, current: AdminDep, session: SessionDep) -> None:
    """Stop a block's sales, with the reason, in the audit log under the admin's name."""
    blocks.deactivate(
        session=session, block_id=block_id, reason=body.reason, actor=current.actor, now=utcnow()
    )
    session.commit()


class SalesLineOut(BaseModel):
    day: date
    price_cents: int
    plays: int
    stakes_cents: int
    prizes_cents: int
    payout_bp: int | None


class SalesOut(BaseModel):
    lines: list[SalesLineOut]
    stakes_cents: int
    prizes_cents: int
    payout_bp: int | None = Field(description="Lots won per stakes, in basis points (7000: 70 %).")
    planned_payout_bp: int
    liability_cents: int = Field(description="Lots still to be won in blocks loaded or on sale.")


@router.get("/sales")
def sales(
    _current: CurrentOperatorDep,
    session: SessionDep,
    since: date | None = None,
    until: Annotated[date | None, Query(lt=date.max)] = None,  # its end is the next midnight
) -> SalesOut:
    """Sales per UTC day and price from ``since`` to ``until`` (both included)."""
    start = datetime.combine(since, time(), UTC) if since else None
    end = datetime.combine(until, time(), UTC) + timedelta(days=1) if until else None
    report = sales_report.sales_report(session=session, since=start, until=end)
    session.commit()
    return SalesOut(
        lines=[SalesLineOut(**asdict(line)) for line in report.lines],
        stakes_cents=report.stakes_cents,
        prizes_cents=report.prizes_cents,
        payout_bp=report.payout_bp,
        planned_payout_bp=report.planned_payout_bp,
        liability_cents=report.liability_cents,
    )


class AuditLineOut(BaseModel):
    seq: int
    created_at: datetime
    kind: str
    actor: str
    payload: str
    sha256: str


class AuditPageOut(BaseModel):
    total: int
    lines: list[AuditLineOut]


class AuditCheckOut(BaseModel):
    ok: bool
    checks: list[tuple[str, bool, str]]


@router.get("/audit")
def audit_log(
    _current: CurrentOperatorDep,
    session: SessionDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    kind: Annotated[str | None, Query(max_length=32)] = None,
    actor: Annotated[str | None, Query(max_length=80)] = None,
) -> AuditPageOut:
    """The audit log, newest first, paged and filtered by kind and actor."""
    page = audit_view.audit_page(
        session=session, offset=offset, limit=limit, kind=kind, actor=actor
    )
    session.commit()
    return AuditPageOut(total=page.total, lines=[AuditLineOut(**asdict(x)) for x in page.lines])


@router.post("/audit/check")
def audit_check(_current: CurrentOperatorDep, session: SessionDep) -> AuditCheckOut:
    """The same checks as ``pharaon audit``: ledger, units, block sizes, the audit chain."""
    report = audit.run_audit(session=session)
    session.commit()
    return AuditCheckOut(ok=report.ok, checks=list(report.checks))


class PlayerLineOut(BaseModel):
    player_id: int
    email: str
    created_at: datetime
    balance_cents: int
    self_excluded_until: datetime | None


class PlayLineOut(BaseModel):
    play_id: int
    created_at: datetime
    block_id: int
    serial: int
    stake_cents: int
    prize_cents: int


class LedgerLineOut(BaseModel):
    transaction_id: int
    created_at: datetime
    kind: str
    amount_cents: int


class PlayerFileOut(BaseModel):
    player: PlayerLineOut
    plays: list[PlayLineOut]
    ledger: list[LedgerLineOut]
    limits: LimitsOut


@router.get("/players")
def search_players(
    _current: CurrentOperatorDep,
    session: SessionDep,
    email: Annotated[str, Query(min_length=1, max_length=254)],
) -> list[PlayerLineOut]:
    """Players whose e-mail contains ``email`` (at most 50)."""
    found = player_view.search(session=session, email=email, now=utcnow())
    session.commit()
    return [PlayerLineOut(**asdict(p)) for p in found]


@router.get("/players/{player_id}")
def player_file(player_id: int, _current: CurrentOperatorDep, session: SessionDep) -> PlayerFileOut:
    """A player's last plays and ledger entries, deposit limits and self-exclusion in force."""
    found = player_view.player_file(session=session, player_id=player_id, now=utcnow())
    session.commit()
    return PlayerFileOut(
        player=PlayerLineOut(**asdict(found.player)),
        plays=[PlayLineOut(**asdict(p)) for p in found.plays],
        ledger=[LedgerLineOut(**asdict(x)) for x in found.ledger],
        limits=LimitsOut.of(found.limits),
    )


class LoadedOut(BaseModel):
    block_id: int


_CHUNK = 1 << 20


@router.post("/blocks", status_code=status.HTTP_201_CREATED)
def load_block(
    file: UploadFile, current: AdminDep, session: SessionDep, settings: SettingsDep
) -> LoadedOut:
    """Upload a block file: verified (manifest, Merkle root, prizes) before it is loaded."""
    from pharaon.service import loading  # here: its block factory (numba) stays out of workers

    with tempfile.TemporaryDirectory(prefix="pharaon-upload-") as folder:
        path = Path(folder) / "block.parquet"
        with path.open("wb") as out:
            while chunk := file.file.read(_CHUNK):
                out.write(chunk)
        block_id = loading.load_block_file(
            session=session,
            path=path,
            allow_test=settings.allow_test_blocks,
            actor=current.actor,
            now=utcnow(),
        )
    session.commit()
    return LoadedOut(block_id=block_id)


class ExportIn(_In):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)  # ISO dates
    since: date = Field(alias="from", description="First day (UTC), included.")
    # Its end is the next midnight: the last day of the calendar has none.
    until: date = Field(alias="to", lt=date.max, description="Last day (UTC), included.")


@router.post(
    "/exports",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"application/zip": {}},
            "description": "A zip of plays, ledger entries and audit records as CSV and "
            "Parquet (amounts in integer cents) and manifest.json with each file's SHA-256.",
        }
    },
)
def export_sales(body: ExportIn, current: CurrentOperatorDep, session: SessionDep) -> Response:
    """The regulator's export of the days ``from`` to ``to``, as ``pharaon export-sales``
    writes it; any operator may take it, and the audit log names who did."""
    from pharaon.service import exports  # here: pyarrow stays out of the workers until asked

    since = datetime.combine(body.since, time(), UTC)
    until = datetime.combine(body.until, time(), UTC) + timedelta(days=1)
    name = f"pharaon-export-{body.since.isoformat()}-{body.until.isoformat()}.zip"
    # On disk, not in memory (a month of plays is large); removed once the answer is sent.
    folder = Path(tempfile.mkdtemp(prefix="pharaon-export-"))
    try:
        out = folder / "export"
        exports.export_audited(
            session=session, since=since, until=until, out=out, actor=current.actor, now=utcnow()
        )
        session.commit()  # the audit head stays locked until then: not while zipping
        with zipfile.ZipFile(folder / name, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(out.iterdir()):
                archive.write(file, file.name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return FileResponse(
        folder / name,
        media_type="application/zip",
        filename=name,
        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
    )
