"""The append-only audit log, each record chained to the previous by SHA-256, and the audit.

Every money movement and operator action appends one record in the same transaction as the
movement itself, so the log holds exactly what was committed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Insert,
    Integer,
    Select,
    String,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Session

from pharaon.game.board import GRIDS
from pharaon.game.modes import Mode
from pharaon.pool import tlog
from pharaon.service import limits_audit, logtree
from pharaon.service.errors import ServiceError
from pharaon.service.findings import Check, Finding, found
from pharaon.store.dialect import Parts, PerDialect
from pharaon.store.tables import (
    GENESIS_HASH,
    PAID_OUT_ACCOUNT,
    PENDING_ACCOUNT,
    WITHDRAWALS_ACCOUNT,
    Account,
    AuditCheckpoint,
    AuditHead,
    AuditRecord,
    Block,
    LedgerEntry,
    LedgerTransaction,
    PlayRow,
    SaleRun,
    UnitRow,
    Withdrawal,
)
from pharaon.store.types import UTCDateTime

_HEAD = 1
ALL_GRIDS = (1 << GRIDS) - 1  # a play's ``revealed`` when every grid is uncovered
_CHAIN_BATCH = 10_000

# Built once: appending is on the path of every purchase, a batch's records in one parameter.
_LOCK_HEAD = select(AuditHead.seq, AuditHead.sha256).where(AuditHead.id == _HEAD).with_for_update()


def _insert_records_sql(sql: Parts) -> Insert:
    new = sql.rows(
        "new",
        seq=Integer(),
        kind=String(),
        actor=String(),
        payload=String(),
        prev_sha256=String(),
        sha256=String(),
    )
    return insert(AuditRecord).from_select(
        ["seq", "created_at", "kind", "actor", "payload", "prev_sha256", "sha256"],
        select(
            new.c.seq,
            bindparam("now", type_=UTCDateTime()),
            new.c.kind,
            new.c.actor,
            new.c.payload,
            new.c.prev_sha256,
            new.c.sha256,
        ),
    )


_INSERT_RECORDS = PerDialect(_insert_records_sql)
_MOVE_HEAD = (
    update(AuditHead)
    .where(AuditHead.id == _HEAD)
    .values(seq=bindparam("new_seq"), sha256=bindparam("new_sha256"))
)


# The server itself, for what it does on its own (a jouer play left unfinished, finished).
SERVER_ACTOR = "server"
# A request that named no account (a log-in with an unknown e-mail).
ANONYMOUS_ACTOR = "anonymous"


def player_actor(player_id: int) -> str:
    """How a player is named in the audit log."""
    return f"player:{player_id}"


def operator_actor(email: str) -> str:
    """How an operator is named in the audit log."""
    return f"operator:{email}"


def canonical_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def record_hash(
    *, prev_sha256: str, seq: int, created_at: datetime, kind: str, actor: str, payload: str
) -> str:
    """The SHA-256 (hex) of one record, covering the previous record's hash."""
    text = "\n".join([prev_sha256, str(seq), created_at.isoformat(), kind, actor, payload])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def append(
    session: Session, *, kind: str, actor: str, payload: dict[str, Any], now: datetime
) -> int:
    """Append one record in the caller's transaction; returns its sequence number.

    The head row is locked (``FOR UPDATE``; SQLite's write lock is already held), so records
    are chained in commit order. Call it last in a transaction: the lock is held until commit.
    """
    return append_many(session, records=[(kind, actor, payload)], now=now)


def append_many(
    session: Session, *, records: Sequence[tuple[str, str, dict[str, Any]]], now: datetime
) -> int:
    """Append ``records`` (kind, actor, payload) in order, in the caller's transaction, with
    one lock of the head and one insert; returns the last sequence number (the head's if none).
    """
    seq, prev = session.execute(_LOCK_HEAD).one()
    if not records:
        return int(seq)
    rows = []
    for kind, actor, payload in records:
        seq += 1
        body = canonical_json(payload)
        digest = record_hash(
            prev_sha256=prev, seq=seq, created_at=now, kind=kind, actor=actor, payload=body
        )
        rows.append(
            {
                "seq": seq,
                "kind": kind,
                "actor": actor,
                "payload": body,
                "prev_sha256": prev,
                "sha256": digest,
            }
        )
        prev = digest
    connection = session.connection()
    connection.execute(_INSERT_RECORDS.on(connection), {"new": rows, "now": now})
    connection.execute(_MOVE_HEAD, {"new_seq": seq, "new_sha256": prev})
    return int(seq)


@dataclass(frozen=True, slots=True)
class AuditReport:
    """The outcome of :func:`run_audit`: one line per check, and what failed."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> list[str]:
        return [f"{check.name}: {check.detail}" for check in self.checks if not check.passed]


def _check_ledger(connection: Connection) -> list[Check]:
    total = connection.execute(
        select(func.coalesce(func.sum(LedgerEntry.amount_cents), 0))
    ).scalar()
    unbalanced = connection.execute(
        select(func.count()).select_from(
            select(LedgerEntry.transaction_id)
            .group_by(LedgerEntry.transaction_id)
            .having(func.sum(LedgerEntry.amount_cents) != 0)
            .subquery()
        )
    ).scalar_one()
    empty = connection.execute(
        select(func.count())
        .select_from(LedgerTransaction)
        .where(
            ~select(LedgerEntry.id)
            .where(LedgerEntry.transaction_id == LedgerTransaction.id)
            .exists()
        )
    ).scalar_one()
    sums = (
        select(LedgerEntry.account_id, func.sum(LedgerEntry.amount_cents).label("total"))
        .group_by(LedgerEntry.account_id)
        .subquery()
    )
    mismatched = connection.execute(
        select(Account.id, Account.balance_cents, func.coalesce(sums.c.total, 0))
        .outerjoin(sums, sums.c.account_id == Account.id)
        .where(Account.balance_cents != func.coalesce(sums.c.total, 0))
        .limit(5)
    ).all()
    summed = found("ledger_sums", total=int(total or 0), unbalanced=unbalanced, empty=empty)
    differ = tuple(
        found("account_differs", account=int(a), balance=int(b), ledger=int(t))
        for a, b, t in mismatched
    )
    return [
        Check("ledger_balances", total == 0 and unbalanced == 0 and empty == 0, (summed,)),
        Check("balances_equal_ledgers", not differ, differ or (found("all_equal"),)),
    ]


def _counts(connection: Connection, query: Select[int, int]) -> dict[int, int]:
    return {int(k): int(v) for k, v in connection.execute(query)}


def _check_units(connection: Connection) -> list[Check]:
    out: list[Check] = []
    plays_per_block = _counts(
        connection, select(PlayRow.block_id, func.count()).group_by(PlayRow.block_id)
    )
    units_per_block = _counts(
        connection, select(UnitRow.block_id, func.count()).group_by(UnitRow.block_id)
    )
    # A play's unit is sold: its serial lies in the sold part of one of its block's runs.
    in_a_run = (
        select(SaleRun.run)
        .where(
            SaleRun.block_id == PlayRow.block_id,
            SaleRun.first_serial <= PlayRow.serial,
            PlayRow.serial < SaleRun.next_serial,
        )
        .exists()
    )
    beyond = _counts(
        connection,
        select(PlayRow.block_id, func.count()).where(~in_a_run).group_by(PlayRow.block_id),
    )
    runs = {
        int(block_id): (int(sold), int(covered), int(first), int(last))
        for block_id, sold, covered, first, last in connection.execute(
            select(
                SaleRun.block_id,
                func.sum(SaleRun.next_serial - SaleRun.first_serial),
                func.sum(SaleRun.last_serial - SaleRun.first_serial + 1),
                func.min(SaleRun.first_serial),
                func.max(SaleRun.last_serial),
            ).group_by(SaleRun.block_id)
        )
    }
    problems: list[Finding] = []
    size_problems: list[Finding] = []
    for block_id, size in connection.execute(select(Block.id, Block.block_size).order_by(Block.id)):
        sold, covered, first, last = runs.get(block_id, (0, 0, 0, 0))
        if (covered, first, last) != (size, 1, size):  # the runs cut 1..size, each once
            size_problems.append(found("runs_cover", block=block_id, covered=covered, size=size))
        plays = plays_per_block.get(block_id, 0)
        if plays != sold or beyond.get(block_id, 0):
            problems.append(
                found(
                    "block_plays",
                    block=block_id,
                    sold=sold,
                    plays=plays,
                    beyond=beyond.get(block_id, 0),
                )
            )
        units = units_per_block.get(block_id, 0)
        unsold = units - sold
        if units != size or sold + unsold != size:
            size_problems.append(
                found("sold_unsold", block=block_id, sold=sold, unsold=unsold, size=size)
            )
    orphans = connection.execute(
        select(func.count())
        .select_from(PlayRow)
        .outerjoin(
            UnitRow, (UnitRow.block_id == PlayRow.block_id) & (UnitRow.serial == PlayRow.serial)
        )
        .where(UnitRow.serial.is_(None))
    ).scalar_one()
    if orphans:
        problems.append(found("plays_orphaned", count=orphans))
    out.append(Check("one_play_per_unit", not problems, tuple(problems or [found("all_match")])))
    wrong_lots = connection.execute(
        select(PlayRow.id, PlayRow.prize_cents, UnitRow.lot_cents)
        .join(UnitRow, (UnitRow.block_id == PlayRow.block_id) & (UnitRow.serial == PlayRow.serial))
        .where(PlayRow.prize_cents != UnitRow.lot_cents)
        .limit(5)
    ).all()
    differ = tuple(
        found("play_lot_differs", play=int(p), lot=int(a), unit=int(b)) for p, a, b in wrong_lots
    )
    out.append(Check("play_lots", not differ, differ or (found("all_equal"),)))
    complete = found("blocks_complete", count=len(units_per_block))
    out.append(Check("block_sizes", not size_problems, tuple(size_problems or [complete])))
    return out


def _check_pending(connection: Connection) -> Check:
    held = connection.execute(
        select(Account.balance_cents).where(Account.id == PENDING_ACCOUNT)
    ).scalar_one()
    waiting = connection.execute(
        select(func.coalesce(func.sum(PlayRow.prize_cents), 0)).where(
            PlayRow.mode == Mode.JOUER, PlayRow.revealed != ALL_GRIDS
        )
    ).scalar_one()
    return Check(
        "pending_lots", held == waiting, (found("pending_held", held=held, waiting=int(waiting)),)
    )


# The ledger transactions of withdrawals: asked (player → withdrawals), paid (withdrawals →
# paid_out), rejected (withdrawals → player).
WITHDRAWAL_KINDS = ("withdrawal", "payout", "refund")


def _moves(transaction: Any, account: Any, amount: Any) -> Any:
    """Whether the ledger transaction ``transaction`` has an entry of ``amount`` on
    ``account`` (SQL expressions)."""
    return (
        select(LedgerEntry.id)
        .where(
            LedgerEntry.transaction_id == transaction,
            LedgerEntry.account_id == account,
            LedgerEntry.amount_cents == amount,
        )
        .exists()
    )


def _check_withdrawals(connection: Connection) -> list[Check]:
    held, paid_out = (
        connection.execute(select(Account.balance_cents).where(Account.id == account)).scalar_one()
        for account in (WITHDRAWALS_ACCOUNT, PAID_OUT_ACCOUNT)
    )
    by_state = {
        state: int(total)
        for state, total in connection.execute(
            select(Withdrawal.state, func.sum(Withdrawal.amount_cents)).group_by(Withdrawal.state)
        )
    }
    sums_ok = held == by_state.get("requested", 0) and paid_out == by_state.get("paid", 0)
    w = Withdrawal
    player_account = Account.id  # the withdrawal's player's, joined below
    asked = _moves(w.request_transaction_id, player_account, -w.amount_cents) & _moves(
        w.request_transaction_id, WITHDRAWALS_ACCOUNT, w.amount_cents
    )
    out_of_held = _moves(w.decision_transaction_id, WITHDRAWALS_ACCOUNT, -w.amount_cents)
    decided = (
        ((w.state == "requested") & w.decision_transaction_id.is_(None))
        | (
            (w.state == "paid")
            & out_of_held
            & _moves(w.decision_transaction_id, PAID_OUT_ACCOUNT, w.amount_cents)
        )
        | (
            (w.state == "rejected")
            & out_of_held
            & _moves(w.decision_transaction_id, player_account, w.amount_cents)
        )
    )
    wrong = (
        connection.execute(
            select(w.id)
            .join(Account, Account.player_id == w.player_id)
            .where(~(asked & decided))
            .order_by(w.id)
            .limit(5)
        )
        .scalars()
        .all()
    )
    used = select(w.request_transaction_id).union(
        select(w.decision_transaction_id).where(w.decision_transaction_id.is_not(None))
    )
    stray = connection.execute(
        select(func.count())
        .select_from(LedgerTransaction)
        .where(
            LedgerTransaction.kind.in_(WITHDRAWAL_KINDS),
            LedgerTransaction.id.not_in(used.scalar_subquery()),
        )
    ).scalar_one()
    sums = found(
        "withdrawals_sums",
        held=held,
        requested=by_state.get("requested", 0),
        paid_out=paid_out,
        paid=by_state.get("paid", 0),
        rejected=by_state.get("rejected", 0),
    )
    moves = [found("withdrawals_differ", ids=", ".join(map(str, wrong)))] if wrong else []
    moves += [found("withdrawal_strays", count=stray)] if stray else []
    return [
        Check("withdrawals_held", sums_ok, (sums,)),
        Check("withdrawal_moves", not moves, tuple(moves or [found("all_match")])),
    ]


def _check_chain(
    connection: Connection,
    published: Sequence[tuple[int, str]] = (),
    roots: dict[int, bytes] | None = None,
) -> Check:
    """Walk the chain from the first record; fill ``roots`` (the sizes wanted, as keys) with
    the Merkle tree's root over the records at each of those sizes, as far as the chain holds."""
    wanted = {} if roots is None else roots
    frontier = tlog.Frontier()
    if 0 in wanted:
        wanted[0] = frontier.root()
    anchors: dict[int, set[str]] = {}
    for seq, digest in [
        *(
            (int(seq), str(digest))
            for seq, digest in connection.execute(
                select(AuditCheckpoint.seq, AuditCheckpoint.sha256)
            )
        ),
        *published,
    ]:
        anchors.setdefault(int(seq), set()).add(digest)
    anchors.pop(0, None)  # the empty chain's head: nothing to anchor
    prev, expected_seq, count = GENESIS_HASH, 1, 0
    last_seq = 0
    while True:
        rows = connection.execute(
            select(AuditRecord)
            .where(AuditRecord.seq > last_seq)
            .order_by(AuditRecord.seq)
            .limit(_CHAIN_BATCH)
        ).all()
        if not rows:
            break
        for r in rows:
            if r.seq != expected_seq:
                return _broken("record_missing", seq=expected_seq)
            digest = record_hash(
                prev_sha256=prev,
                seq=r.seq,
                created_at=r.created_at,
                kind=r.kind,
                actor=r.actor,
                payload=r.payload,
            )
            if r.prev_sha256 != prev or r.sha256 != digest:
                return _broken("record_hash", seq=r.seq)
            if anchors.get(r.seq, {r.sha256}) != {r.sha256}:
                return _broken("record_rewritten", seq=r.seq)
            frontier.append(tlog.leaf_hash(bytes.fromhex(r.sha256)))
            if r.seq in wanted:
                wanted[r.seq] = frontier.root()
            prev, expected_seq, count = r.sha256, expected_seq + 1, count + 1
        last_seq = rows[-1].seq
    head_seq, head_hash = connection.execute(
        select(AuditHead.seq, AuditHead.sha256).where(AuditHead.id == _HEAD)
    ).one()
    if head_seq != count or head_hash != prev:
        return _broken("head_count", head=head_seq, records=count)
    beyond = sorted(seq for seq in anchors if seq > count)
    if beyond:
        return _broken("checkpoint_beyond", seq=beyond[0], records=count)
    whole = found("chain_whole", records=count, checkpoints=len(anchors))
    return Check("audit_chain", True, (whole,))


def _broken(code: str, **figures: int) -> Check:
    return Check("audit_chain", False, (found(code, **figures),))


def _tree_fails(code: str, **figures: int | str) -> Check:
    return Check("transparency_log", False, (found(code, **figures),))


def _tree_claims(
    connection: Connection, signed: Sequence[tuple[int, str]]
) -> list[tuple[str, int, str]] | str:
    """Who says the log's Merkle root at which size: (who, size, root hex), ``who`` a word of
    :data:`~pharaon.service.findings.WORDS`; or why the stored tree cannot be read."""
    claims = [
        ("stored_checkpoint", int(seq), str(root))
        for seq, root in connection.execute(
            select(AuditCheckpoint.seq, AuditCheckpoint.root).where(
                AuditCheckpoint.root.is_not(None)
            )
        )
    ]
    size = logtree.stored_size(connection=connection)
    try:
        claims.append(
            ("stored_tree", size, logtree.root(connection=connection, tree_size=size).hex())
        )
    except ServiceError as exc:
        return exc.detail
    claims += [("signed_checkpoint", size, root) for size, root in signed]
    return claims


def _check_tree(
    claims: list[tuple[str, int, str]] | str, roots: dict[int, bytes], *, chain_holds: bool
) -> Check:
    """Each claim's root against the log's at its size; a claim past a broken chain is not
    checked (the chain's check fails already), past a whole one it fails."""
    if isinstance(claims, str):
        return _tree_fails("tree_unreadable", reason=claims)
    unchecked = 0
    for who, size, root in claims:
        got = roots.get(size, b"")
        if not got and not chain_holds:
            unchecked += 1
        elif not got:
            return _tree_fails("claim_beyond", who=who, size=size)
        elif got.hex() != root:
            return _tree_fails("claim_root", who=who, size=size, root=root, found=got.hex())
    signed = sum(who == "signed_checkpoint" for who, _, _ in claims)
    agree = [found("tree_agrees", stored=len(claims) - signed - 1, signed=signed)]
    agree += [found("tree_unchecked", count=unchecked)] if unchecked else []
    return Check("transparency_log", True, tuple(agree))


def run_audit(
    *,
    connection: Connection,
    published: Sequence[tuple[int, str]] = (),
    signed: Sequence[tuple[int, str]] = (),
) -> AuditReport:
    """Check the ledger, the balances, the pending lots, the withdrawals' accounts and
    transactions, units against plays, block sizes, the players' limits
    (:mod:`pharaon.service.limits_audit`) and the audit chain, which must pass
    through every checkpoint: the stored ones and ``published`` (seq, sha256), copies kept
    outside the database; then that the Merkle tree over the chain has the roots that the
    stored tree, the stored checkpoints and ``signed`` (tree size, root hex: signed
    checkpoints kept outside, their signatures checked by the caller) say. Read in the
    caller's transaction, which must see one snapshot (a reader's), or the checks would
    compare moments apart while sales go on."""
    claims = _tree_claims(connection, signed)
    roots: dict[int, bytes] = {}
    if not isinstance(claims, str):
        roots = dict.fromkeys((size for _, size, _ in claims), b"")
    checks = [
        *_check_ledger(connection),
        _check_pending(connection),
        *_check_withdrawals(connection),
        *_check_units(connection),
    ]
    chain = _check_chain(connection, published, roots)
    checks += [
        chain,
        _check_tree(claims, roots, chain_holds=chain.passed),
        limits_audit.check_limits(connection),
    ]
    return AuditReport(tuple(checks))


def head(*, connection: Connection) -> tuple[int, str]:
    """The chain's head: the last record's sequence number and hash (0 and zeros if empty)."""
    seq, digest = connection.execute(
        select(AuditHead.seq, AuditHead.sha256).where(AuditHead.id == _HEAD)
    ).one()
    return int(seq), str(digest)
