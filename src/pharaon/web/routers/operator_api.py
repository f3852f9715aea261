"""The back office's API under ``/operator/``: log-in with TOTP, and the blocks (an analyst
reads, an admin also deactivates and loads, an auditor verifies and approves them), sales,
players, the audit log and the regulator's export."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import asdict
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Literal

from anyio import to_thread
from fastapi import APIRouter, Query, Request, Response, UploadFile, status
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from pharaon.service import (
    audit,
    audit_view,
    blocks,
    identity,
    logins,
    measures,
    operators,
    player_view,
    revealed_keys,
    sales_report,
    sealing,
    sessions,
    stock,
    withdrawals,
)
from pharaon.service.clock import utcnow
from pharaon.service.errors import UnauthorizedError
from pharaon.web.database import DatabaseDep
from pharaon.web.deps import (
    OPERATOR_COOKIE,
    OPERATOR_CSRF_COOKIE,
    AdminOperator,
    AuditorOperator,
    CurrentOperator,
    RowId,
    SettingsDep,
    client_address,
    closed_session,
    open_session,
    seen,
    thresholds,
    throttle,
    verified,
)
from pharaon.web.schemas import (
    NO_NUL,
    ApprovalOut,
    AuditCheckOut,
    AuditLineOut,
    AuditPageOut,
    CheckOut,
    DeactivateIn,
    ExportIn,
    IdentityCheckOut,
    IdentityIn,
    IdentityLineOut,
    IdentityOut,
    KeysIn,
    LedgerLineOut,
    LimitsOut,
    LoadedOut,
    MeasureIn,
    NoteOut,
    OperatorBlockOut,
    OperatorLoginIn,
    OperatorOut,
    OperatorWithdrawalOut,
    PlayerFileOut,
    PlayerLineOut,
    PlayLineOut,
    RejectIn,
    RevealedKeysOut,
    SalesLineOut,
    SalesOut,
    SessionOut,
    VerificationOut,
    WatchOut,
)

router = APIRouter(prefix="/operator", tags=["operator"])


@router.post("/sessions")
async def log_in(
    body: OperatorLoginIn,
    request: Request,
    response: Response,
    db: DatabaseDep,
    settings: SettingsDep,
) -> SessionOut:
    """Log in with e-mail, password and the authenticator's one-time code; locked out (429)
    after repeated failures, as players are. A code opens one session."""
    email = operators.login_email(body.email)
    attempt = await db.write(
        operators.begin_log_in,
        email=email,
        client=client_address(request),
        throttle=throttle(settings),
        now=utcnow(),
    )
    now = utcnow()
    step = None
    if await verified(attempt.password_hash, body.password):
        sealer = sealing.load(settings.keys_dir)
        step = operators.accepted_step(attempt, body.totp_code, now=now, sealer=sealer)
    if step is None:
        await db.write(logins.failed, keys=attempt.keys)
        raise UnauthorizedError(operators.WRONG)
    created = await db.write(operators.finish_log_in, attempt=attempt, step=step, now=now)
    return open_session(
        request,
        response,
        settings,
        created,
        cookie=OPERATOR_COOKIE,
        csrf_cookie=OPERATOR_CSRF_COOKIE,
    )


@router.delete("/sessions/current", status_code=status.HTTP_204_NO_CONTENT)
async def log_out(current: CurrentOperator, db: DatabaseDep) -> Response:
    """End the operator's session."""
    await db.write(sessions.end, token_sha256=current.token_sha256)
    return closed_session(cookie=OPERATOR_COOKIE, csrf_cookie=OPERATOR_CSRF_COOKIE)


@router.get("/me")
async def me(current: CurrentOperator) -> OperatorOut:
    """Who is logged in, and their role."""
    return OperatorOut(operator_id=current.operator_id, email=current.email, role=current.role)


@router.get("/blocks")
async def list_blocks(_current: CurrentOperator, db: DatabaseDep) -> list[OperatorBlockOut]:
    """Every block: state, sold and remaining units, remaining lots by amount."""
    return [
        OperatorBlockOut(
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
            loaded_by=b.loaded_by,
            approved_at=b.approved_at,
            approved_by=b.approved_by,
        )
        for b in await db.read(blocks.list_blocks)
    ]


@router.get("/blocks/{block_id}/verification")
async def verify_block(
    block_id: RowId, _current: CurrentOperator, db: DatabaseDep
) -> VerificationOut:
    """The server's own verification of a block's stored units (what it sells): every unit
    evaluated again against the prize table, the units' SHA-256 and Merkle root recomputed,
    the near-miss measures and the order tests."""
    from pharaon.service import approvals  # here: the evaluator (numba) stays out of servers

    figures = await db.read(approvals.verify_loaded, block_id=block_id, slow=True)
    return VerificationOut.model_validate(figures.as_json())


@router.post("/blocks/{block_id}/approval", status_code=status.HTTP_201_CREATED)
async def approve_block(block_id: RowId, current: AuditorOperator, db: DatabaseDep) -> ApprovalOut:
    """An auditor's approval of a loaded block for sale, after the server's verification of its
    stored units (run here, and in the audit record); not by the operator who loaded it. It
    opens if no block is on sale at its price."""
    from pharaon.service import approvals  # here: the evaluator (numba) stays out of servers

    figures = await db.read(approvals.verify_loaded, block_id=block_id, slow=True)
    now = utcnow()
    state = await db.write(
        approvals.approve, block_id=block_id, actor=current.actor, figures=figures, now=now
    )
    return ApprovalOut(
        block_id=block_id,
        state=state,
        approved_by=current.actor,
        approved_at=now,
        verification=VerificationOut.model_validate(figures.as_json()),
    )


@router.post("/blocks/{block_id}/deactivate", status_code=status.HTTP_204_NO_CONTENT)
async def deactivate(
    block_id: RowId, body: DeactivateIn, current: AdminOperator, db: DatabaseDep
) -> None:
    """Stop a block's sales, with the reason, in the audit log under the admin's name."""
    await db.write(
        blocks.deactivate, block_id=block_id, reason=body.reason, actor=current.actor, now=utcnow()
    )


@router.post("/blocks/{block_id}/keys")
async def reveal_keys(
    block_id: RowId, body: KeysIn, current: AdminOperator, db: DatabaseDep
) -> RevealedKeysOut:
    """Publish a closed block's vendor and operator keys (hex), once each one's SHA-256 is the
    manifest's commitment and every block the pair made is sold out or deactivated (409
    otherwise, naming those still loaded or open; 422 for a key that is not the block's);
    published for all of them, in the audit log under the admin's name. The same keys again
    answer the publication."""
    revealed = await db.write(
        revealed_keys.reveal,
        block_id=block_id,
        vendor_key=bytes.fromhex(body.vendor_key),
        operator_key=bytes.fromhex(body.operator_key),
        actor=current.actor,
        now=utcnow(),
    )
    return RevealedKeysOut.of(revealed)


@router.get("/sales")
async def sales(
    _current: CurrentOperator,
    db: DatabaseDep,
    since: date | None = None,
    until: Annotated[date | None, Query(lt=date.max)] = None,  # its end is the next midnight
) -> SalesOut:
    """Sales per UTC day and price from ``since`` to ``until`` (both included)."""
    start = datetime.combine(since, time(), UTC) if since else None
    end = datetime.combine(until, time(), UTC) + timedelta(days=1) if until else None
    report = await db.read(sales_report.sales_report, since=start, until=end, slow=True)
    return SalesOut(
        lines=[SalesLineOut(**asdict(line)) for line in report.lines],
        stakes_cents=report.stakes_cents,
        prizes_cents=report.prizes_cents,
        payout_bp=report.payout_bp,
        planned_payout_bp=report.planned_payout_bp,
        liability_cents=report.liability_cents,
    )


@router.get("/stock")
async def stock_watch(
    _current: CurrentOperator, db: DatabaseDep, settings: SettingsDep
) -> WatchOut:
    """Per price, the units left, the blocks behind and the hours they last at the last day's
    pace; the day's payouts against their band; the last day's large lots; the alerts."""
    found = await db.read(stock.watch, now=utcnow(), thresholds=thresholds(settings))
    return WatchOut.model_validate(asdict(found))


@router.get("/audit")
async def audit_log(
    _current: CurrentOperator,
    db: DatabaseDep,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    kind: Annotated[str | None, Query(max_length=32, pattern=NO_NUL)] = None,
    actor: Annotated[str | None, Query(max_length=80, pattern=NO_NUL)] = None,
) -> AuditPageOut:
    """The audit log, newest first, paged and filtered by kind and actor."""
    page = await db.read(audit_view.audit_page, offset=offset, limit=limit, kind=kind, actor=actor)
    return AuditPageOut(total=page.total, lines=[AuditLineOut(**asdict(x)) for x in page.lines])


@router.post("/audit/check")
async def audit_check(_current: CurrentOperator, db: DatabaseDep) -> AuditCheckOut:
    """The same checks as ``pharaon audit``, on one snapshot: ledger, units, block sizes, the
    audit chain."""
    report = await db.read(audit.run_audit, slow=True)
    checks = [CheckOut.model_validate(check) for check in report.checks]
    return AuditCheckOut(ok=report.ok, checks=checks)


@router.get("/players")
async def search_players(
    _current: CurrentOperator,
    db: DatabaseDep,
    email: Annotated[str, Query(min_length=1, max_length=254, pattern=NO_NUL)],
) -> list[PlayerLineOut]:
    """Players whose e-mail contains ``email`` (at most 50)."""
    found = await db.read(player_view.search, email=email, now=utcnow())
    return [PlayerLineOut(**asdict(p)) for p in found]


@router.get("/players/{player_id}")
async def player_file(
    player_id: RowId, _current: CurrentOperator, db: DatabaseDep, settings: SettingsDep
) -> PlayerFileOut:
    """A player's last plays and ledger entries, deposit limits and self-exclusion in force,
    the identity's state and check, the last withdrawals."""
    now = utcnow()
    found = await db.read(player_view.player_file, player_id=player_id, now=now)
    check = found.identity_check
    return PlayerFileOut(
        player=PlayerLineOut(**asdict(found.player)),
        plays=[PlayLineOut(**asdict(p)) for p in found.plays],
        ledger=[LedgerLineOut(**asdict(x)) for x in found.ledger],
        limits=LimitsOut.of(found.limits),
        notes=[NoteOut(**asdict(n)) for n in found.notes],
        identity=IdentityOut.of(
            identity.identity_of(
                created_at=found.player.created_at,
                verified_at=found.player.verified_at,
                now=now,
                days=settings.identity_days,
            )
        ),
        identity_check=None if check is None else IdentityCheckOut(**asdict(check)),
        withdrawals=[_withdrawal(w) for w in found.withdrawals],
    )


@router.post("/players/{player_id}/identity", status_code=status.HTTP_201_CREATED)
async def verify_identity(
    player_id: RowId, body: IdentityIn, current: AdminOperator, request: Request, db: DatabaseDep
) -> IdentityCheckOut:
    """Mark the player's identity verified, with what the admin saw on the document and the
    IBAN withdrawals will go to; lifts the suspension of an identity left unverified. In the
    audit log under the admin's name, with the session and the address."""
    now = utcnow()
    checked = await db.write(
        identity.verify,
        player_id=player_id,
        operator_id=current.operator_id,
        actor=current.actor,
        document=identity.Document(
            kind=body.document_kind,
            ref=body.document_ref,
            last_name=body.last_name,
            first_names=body.first_names,
            birth_date=body.birth_date,
            iban=body.iban,
        ),
        now=now,
        seen=seen(request, current),
    )
    return IdentityCheckOut(**asdict(identity.CheckSeen.of(checked, now, current.email)))


@router.get("/identities")
async def identities(
    _current: CurrentOperator,
    db: DatabaseDep,
    settings: SettingsDep,
    state: Literal["provisional", "verified"] = "provisional",
) -> list[IdentityLineOut]:
    """Open accounts whose identity is ``provisional`` (the nearest deadline first) or
    ``verified`` (the last verified first), at most 100."""
    now = utcnow()
    found = await db.read(identity.listing, state=state, now=now, days=settings.identity_days)
    return [
        IdentityLineOut(
            player_id=line.player_id,
            email=line.email,
            created_at=line.created_at,
            identity=IdentityOut.of(line.identity),
            suspended=line.suspended,
            closed_at=line.closed_at,
        )
        for line in found
    ]


def _withdrawal(line: withdrawals.WaitingLine) -> OperatorWithdrawalOut:
    return OperatorWithdrawalOut.of(line.withdrawal, line.email, line.decided_by)


@router.get("/withdrawals")
async def list_withdrawals(
    _current: CurrentOperator,
    db: DatabaseDep,
    state: Literal["requested", "paid", "rejected"] = "requested",
) -> list[OperatorWithdrawalOut]:
    """Withdrawals in ``state``: those waiting for approval oldest first, the others newest
    first; at most 200."""
    return [_withdrawal(w) for w in await db.read(withdrawals.listing, state=state)]


@router.post("/withdrawals/{withdrawal_id}/approve")
async def approve_withdrawal(
    withdrawal_id: RowId, current: AdminOperator, request: Request, db: DatabaseDep
) -> OperatorWithdrawalOut:
    """Pay a withdrawal waiting for approval; 409 if it was decided already."""
    done = await db.write(
        withdrawals.approve,
        withdrawal_id=withdrawal_id,
        operator_id=current.operator_id,
        actor=current.actor,
        now=utcnow(),
        seen=seen(request, current),
    )
    return _withdrawal(done)


@router.post("/withdrawals/{withdrawal_id}/reject")
async def reject_withdrawal(
    withdrawal_id: RowId,
    body: RejectIn,
    current: AdminOperator,
    request: Request,
    db: DatabaseDep,
) -> OperatorWithdrawalOut:
    """Refuse a withdrawal waiting for approval, for a reason the player reads: the amount
    goes back to the player's balance; 409 if it was decided already."""
    done = await db.write(
        withdrawals.reject,
        withdrawal_id=withdrawal_id,
        operator_id=current.operator_id,
        actor=current.actor,
        reason=body.reason,
        now=utcnow(),
        seen=seen(request, current),
    )
    return _withdrawal(done)


@router.post("/players/{player_id}/measures", status_code=status.HTTP_201_CREATED)
async def take_measure(
    player_id: RowId, body: MeasureIn, current: AdminOperator, db: DatabaseDep
) -> NoteOut:
    """Note, suspend, exclude for ``days``, lift, or close a player's account, for a reason the
    player reads on their page; in the audit log under the admin's name."""
    note = await db.write(
        measures.take,
        player_id=player_id,
        operator_id=current.operator_id,
        actor=current.actor,
        measure=body.measure,
        reason=body.reason,
        days=body.days,
        now=utcnow(),
    )
    return NoteOut(**{**asdict(note), "operator": current.email})


_CHUNK = 1 << 20


@router.post("/blocks", status_code=status.HTTP_201_CREATED)
async def load_block(
    file: UploadFile, current: AdminOperator, db: DatabaseDep, settings: SettingsDep
) -> LoadedOut:
    """Upload a block file: verified (manifest, Merkle root, prizes) before it is loaded."""
    from pharaon.service import loading  # here: its block factory (numba) stays out of servers

    with tempfile.TemporaryDirectory(prefix="pharaon-upload-") as folder:
        path = Path(folder) / "block.parquet"
        with path.open("wb") as out:
            while chunk := await file.read(_CHUNK):
                out.write(chunk)
        block_id = await db.write(
            loading.load_block_file,
            slow=True,
            path=path,
            allow_test=settings.allow_test_blocks,
            actor=current.actor,
            now=utcnow(),
            sale_runs=settings.sale_runs,
        )
    return LoadedOut(block_id=block_id)


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
async def export_sales(body: ExportIn, current: CurrentOperator, db: DatabaseDep) -> Response:
    """The regulator's export of the days ``from`` to ``to``, as ``pharaon export-sales``
    writes it; any operator may take it, and the audit log names who did."""
    from pharaon.service import exports  # here: pyarrow stays out of the servers until asked

    since = datetime.combine(body.since, time(), UTC)
    until = datetime.combine(body.until, time(), UTC) + timedelta(days=1)
    name = f"pharaon-export-{body.since.isoformat()}-{body.until.isoformat()}.zip"
    # On disk, not in memory (a month of plays is large); removed once the answer is sent.
    folder = Path(tempfile.mkdtemp(prefix="pharaon-export-"))
    try:
        out = folder / "export"
        exported = await db.read(
            exports.export_period, since=since, until=until, out=out, slow=True
        )
        await db.write(
            exports.record_export,
            exported=exported,
            since=since,
            until=until,
            actor=current.actor,
            now=utcnow(),
        )
        await to_thread.run_sync(_zip, out, folder / name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return FileResponse(
        folder / name,
        media_type="application/zip",
        filename=name,
        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
    )


def _zip(folder: Path, archive: Path) -> None:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for file in sorted(folder.iterdir()):
            out.write(file, file.name)
