"""Withdrawals: money out of a player's balance to the IBAN given when their identity was
verified (service/identity.py; decree 2010-518, docs/rules.md §7).

A withdrawal is *requested* from the withdrawable balance, which is the wallet's balance itself
(``accounts.balance_cents``): the lots of « Jouer » plays not fully uncovered are not in it
(they wait in the ``pending`` account), and a withdrawal already requested has left it. The
request moves the amount from the player's account to the ``withdrawals`` account; up to the
approval threshold it is *paid* at once (moved on to ``paid_out``), above it it waits for an
admin, who approves it (*paid*) or rejects it (*rejected*: the amount goes back to the player's
account). Each state is one ledger transaction, so money is conserved; each change of state is
one conditional update of the withdrawal's row, so two admins cannot both decide one
withdrawal; each is an audit record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import audit, idempotency, ledger, measures, traces
from pharaon.service.errors import (
    AccountClosedError,
    ConflictError,
    IdentityUnverifiedError,
    InsufficientFundsError,
    InvalidError,
    NotFoundError,
)
from pharaon.store.tables import (
    PAID_OUT_ACCOUNT,
    WITHDRAWAL_STATES,
    WITHDRAWALS_ACCOUNT,
    Account,
    IdentityCheck,
    Operator,
    Player,
    Withdrawal,
)

MAX_WITHDRAWAL_CENTS = 100_000_000_000
REASON_MAX = 500
REQUESTED, PAID, REJECTED = WITHDRAWAL_STATES
_SHOWN = 50
_LISTED = 200


@dataclass(frozen=True, slots=True)
class WithdrawalView:
    """A withdrawal as its player and the back office see it (``reason``: a rejection's)."""

    withdrawal_id: int
    player_id: int
    amount_cents: int
    iban: str
    state: str
    requested_at: datetime
    decided_at: datetime | None
    reason: str | None
    # Whether an admin decided it (False: paid at once under the threshold, or still waiting).
    decided_by_operator: bool


_VIEW = select(
    Withdrawal.id,
    Withdrawal.player_id,
    Withdrawal.amount_cents,
    Withdrawal.iban,
    Withdrawal.state,
    Withdrawal.requested_at,
    Withdrawal.decided_at,
    Withdrawal.reason,
    Withdrawal.operator_id.is_not(None),
)


def _view(connection: Connection, withdrawal_id: int) -> WithdrawalView:
    row = connection.execute(_VIEW.where(Withdrawal.id == withdrawal_id)).one()
    return WithdrawalView(*row)


def request(
    *,
    session: Session,
    player_id: int,
    amount_cents: int,
    idempotency_key: str | None,
    approval_cents: int,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> WithdrawalView:
    """Withdraw ``amount_cents`` to the player's verified IBAN, once per idempotency key: paid
    at once up to ``approval_cents``, else waiting for an admin. Refused (and nothing changed)
    with :class:`IdentityUnverifiedError` while the account is provisional,
    :class:`SuspendedError` while suspended, :class:`InsufficientFundsError` beyond the
    withdrawable balance."""
    key = idempotency.check_key(idempotency_key)
    if not 1 <= amount_cents <= MAX_WITHDRAWAL_CENTS:
        raise InvalidError(f"amount_cents must be 1..{MAX_WITHDRAWAL_CENTS}, got {amount_cents}")
    claim = idempotency.claim(
        session,
        player_id=player_id,
        key=key,
        digest=idempotency.request_digest("withdrawal", {"amount_cents": amount_cents}),
        now=now,
    )
    if claim.replay_of is not None:
        return _view(session.connection(), claim.replay_of)
    player = session.execute(
        select(
            Player.closed_at,
            Player.verified_at,
            Player.suspended_at,
            Player.suspended_until,
            IdentityCheck.iban,
        )
        .outerjoin(IdentityCheck, IdentityCheck.player_id == Player.id)
        .where(Player.id == player_id)
    ).one()
    if player.closed_at is not None:
        raise AccountClosedError(
            "this account is closed", fields={"closed_at": player.closed_at.isoformat()}
        )
    if player.verified_at is None or player.iban is None:
        raise IdentityUnverifiedError(
            "the account is provisional until the operator has verified your identity: "
            "no withdrawal before"
        )
    suspended = measures.suspension_refusal(player.suspended_at, player.suspended_until, now)
    if suspended is not None:
        raise suspended
    # The player's account first, with the funds guard, as every writer locks it.
    taken = session.execute(
        update(Account)
        .where(Account.player_id == player_id, Account.balance_cents >= amount_cents)
        .values(balance_cents=Account.balance_cents - amount_cents)
        .returning(Account.id)
    ).first()
    if taken is None:
        raise InsufficientFundsError(
            f"amount_cents {amount_cents} is more than the withdrawable balance"
        )
    account_id = int(taken.id)
    asked = ledger.post(
        session,
        kind="withdrawal",
        entries=[(account_id, -amount_cents), (WITHDRAWALS_ACCOUNT, amount_cents)],
        now=now,
        settled=frozenset({account_id}),
    )
    at_once = amount_cents <= approval_cents
    paid = _pay_out(session, amount_cents, now) if at_once else None
    withdrawal_id = int(
        session.execute(
            insert(Withdrawal)
            .values(
                player_id=player_id,
                amount_cents=amount_cents,
                iban=player.iban,
                state=PAID if at_once else REQUESTED,
                requested_at=now,
                request_transaction_id=asked,
                decided_at=now if at_once else None,
                decision_transaction_id=paid,
            )
            .returning(Withdrawal.id)
        ).scalar_one()
    )
    idempotency.settle(session, key_id=claim.key_id, result_id=withdrawal_id)
    traces.record(
        session,
        kind="withdrawal",
        player_id=player_id,
        seen=seen,
        now=now,
        withdrawal_id=withdrawal_id,
        amount_cents=amount_cents,
        transaction_id=asked,
        waits_for_approval=not at_once,
    )
    if paid is not None:
        _record_decision(
            session,
            PAID,
            withdrawal_id=withdrawal_id,
            player_id=player_id,
            amount_cents=amount_cents,
            transaction_id=paid,
            now=now,
        )
    return _view(session.connection(), withdrawal_id)


def _pay_out(session: Session, amount_cents: int, now: datetime) -> int:
    return ledger.post(
        session,
        kind="payout",
        entries=[(WITHDRAWALS_ACCOUNT, -amount_cents), (PAID_OUT_ACCOUNT, amount_cents)],
        now=now,
    )


def _record_decision(
    session: Session,
    state: str,
    *,
    withdrawal_id: int,
    player_id: int,
    amount_cents: int,
    transaction_id: int,
    now: datetime,
    actor: str = audit.SERVER_ACTOR,
    seen: traces.Seen = traces.UNSEEN,
    reason: str | None = None,
) -> None:
    audit.append(
        session,
        kind=f"withdrawal_{state}",
        actor=actor,
        payload={
            "player_id": player_id,
            **seen.fields(),
            "withdrawal_id": withdrawal_id,
            "amount_cents": amount_cents,
            "transaction_id": transaction_id,
            **({} if reason is None else {"reason": reason}),
        },
        now=now,
    )


def _waiting(session: Session, withdrawal_id: int) -> tuple[int, int]:
    """The player and amount of a withdrawal waiting for a decision; else 404 or 409."""
    row = session.execute(
        select(Withdrawal.player_id, Withdrawal.amount_cents, Withdrawal.state).where(
            Withdrawal.id == withdrawal_id
        )
    ).first()
    if row is None:
        raise NotFoundError(f"no withdrawal {withdrawal_id}")
    if row.state != REQUESTED:
        raise ConflictError(f"withdrawal {withdrawal_id} is already {row.state}")
    return int(row.player_id), int(row.amount_cents)


def _decide(session: Session, withdrawal_id: int, state: str, **values: object) -> None:
    """The one conditional update that moves a waiting withdrawal to ``state``: of two admins
    deciding at once, one does; the other's transaction (and its ledger movement) is rolled
    back with :class:`ConflictError`."""
    done = session.execute(
        update(Withdrawal)
        .where(Withdrawal.id == withdrawal_id, Withdrawal.state == REQUESTED)
        .values(state=state, **values)
        .returning(Withdrawal.id)
    ).first()
    if done is None:
        raise ConflictError(f"withdrawal {withdrawal_id} was decided meanwhile")


def approve(
    *,
    session: Session,
    withdrawal_id: int,
    operator_id: int,
    actor: str,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> WaitingLine:
    """Pay a withdrawal waiting for approval: its amount from ``withdrawals`` to
    ``paid_out``."""
    player_id, amount = _waiting(session, withdrawal_id)
    paid = _pay_out(session, amount, now)
    _decide(
        session,
        withdrawal_id,
        PAID,
        decided_at=now,
        operator_id=operator_id,
        decision_transaction_id=paid,
    )
    _record_decision(
        session,
        PAID,
        withdrawal_id=withdrawal_id,
        player_id=player_id,
        amount_cents=amount,
        transaction_id=paid,
        now=now,
        actor=actor,
        seen=seen,
    )
    return _line(session.connection(), withdrawal_id)


def reject(
    *,
    session: Session,
    withdrawal_id: int,
    operator_id: int,
    actor: str,
    reason: str,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> WaitingLine:
    """Refuse a withdrawal waiting for approval, for ``reason`` (the player reads it): its
    amount goes back to the player's balance."""
    reason = reason.strip()
    if not 1 <= len(reason) <= REASON_MAX:
        raise InvalidError(f"reason must be 1 to {REASON_MAX} characters")
    player_id, amount = _waiting(session, withdrawal_id)
    # The player's account before the operator's, as every writer locks them.
    account_id = int(
        session.execute(
            update(Account)
            .where(Account.player_id == player_id)
            .values(balance_cents=Account.balance_cents + amount)
            .returning(Account.id)
        ).scalar_one()
    )
    back = ledger.post(
        session,
        kind="refund",
        entries=[(WITHDRAWALS_ACCOUNT, -amount), (account_id, amount)],
        now=now,
        settled=frozenset({account_id}),
    )
    _decide(
        session,
        withdrawal_id,
        REJECTED,
        decided_at=now,
        operator_id=operator_id,
        decision_transaction_id=back,
        reason=reason,
    )
    _record_decision(
        session,
        REJECTED,
        withdrawal_id=withdrawal_id,
        player_id=player_id,
        amount_cents=amount,
        transaction_id=back,
        now=now,
        actor=actor,
        seen=seen,
        reason=reason,
    )
    return _line(session.connection(), withdrawal_id)


def of_player(*, connection: Connection, player_id: int) -> list[WithdrawalView]:
    """The player's last withdrawals, newest first."""
    rows = connection.execute(
        _VIEW.where(Withdrawal.player_id == player_id).order_by(Withdrawal.id.desc()).limit(_SHOWN)
    )
    return [WithdrawalView(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class WaitingLine:
    """A withdrawal in the back office's list, with its player's e-mail."""

    withdrawal: WithdrawalView
    email: str
    decided_by: str | None  # the admin's e-mail


def listing(*, connection: Connection, state: str) -> list[WaitingLine]:
    """The withdrawals in ``state`` for the back office, oldest first for those waiting (the
    first to decide), newest first otherwise; at most 200."""
    if state not in WITHDRAWAL_STATES:
        raise InvalidError(f"state must be one of {', '.join(WITHDRAWAL_STATES)}, got {state!r}")
    order = Withdrawal.id if state == REQUESTED else Withdrawal.id.desc()
    return _lines(connection, Withdrawal.state == state, order)


def lines_of_player(*, connection: Connection, player_id: int) -> list[WaitingLine]:
    """A player's last withdrawals for the back office's file, newest first."""
    return _lines(connection, Withdrawal.player_id == player_id, Withdrawal.id.desc(), _SHOWN)


def _line(connection: Connection, withdrawal_id: int) -> WaitingLine:
    (line,) = _lines(connection, Withdrawal.id == withdrawal_id, Withdrawal.id)
    return line


def _lines(
    connection: Connection, where: Any, order: Any, limit: int = _LISTED
) -> list[WaitingLine]:
    rows = connection.execute(
        _VIEW.add_columns(Player.email, Operator.email)
        .join(Player, Player.id == Withdrawal.player_id)
        .outerjoin(Operator, Operator.id == Withdrawal.operator_id)
        .where(where)
        .order_by(order)
        .limit(limit)
    )
    return [WaitingLine(WithdrawalView(*row[:9]), row[9], row[10]) for row in rows]
