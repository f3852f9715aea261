"""The audit of the player's limits: no accepted stake, loss or deposit passed a limit in force
at its time, and none came before the moderators (docs/rules.md §6).

It replays the audit log, whose records are chained in commit order, player by player: a
player's limit changes (each record says the rows it left, ``limits_after``), purchases, lots
credited and deposits. Every writer of these holds the player's account locked from before
its checks until its commit, and appends its records last, so for one player the log's order
is the order in which the writers held the account: what each sale or deposit saw when it
decided. At each purchase the stakes of every stake limit's window (``created_at`` within the
span before it), the net loss of the loss limit's window (stakes minus the lots credited
before it) and, at each deposit, the deposits of each deposit limit's window, are checked
against the limits that the rows in force then (:func:`pharaon.service.limits.in_force`) put
in force at the record's time. The sale counts a stake limit's window by whole hours, never
less than its span: what it refuses includes what this check would.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from pharaon.game.modes import Mode
from pharaon.service import limits
from pharaon.service.findings import Check, Finding, found
from pharaon.store.tables import AuditRecord, PlayRow

_KINDS = ("deposit_limits", "stake_limits", "loss_limit", "purchase", "prize", "deposit")
_BATCH = 10_000
_SHOWN = 5  # failures named in the report
_Fault = tuple[str, dict[str, int | str]]  # a finding's code and figures, but where it was


class _Window:
    """Amounts at times, added in any order; the sum of those after a time."""

    def __init__(self) -> None:
        self._times: list[datetime] = []
        self._totals: list[int] = []  # _totals[k]: the amounts of _times[0..k]

    def add(self, at: datetime, cents: int) -> None:
        k = bisect_right(self._times, at)  # nearly always at the end
        self._times.insert(k, at)
        self._totals.insert(k, (self._totals[k - 1] if k else 0) + cents)
        for later in range(k + 1, len(self._totals)):
            self._totals[later] += cents

    def after(self, since: datetime) -> int:
        """The amounts at times after ``since``."""
        if not self._totals:
            return 0
        k = bisect_right(self._times, since)
        return self._totals[-1] - (self._totals[k - 1] if k else 0)


@dataclass
class _Player:
    rows: dict[str, limits.LimitRow] = field(default_factory=dict)
    stakes: _Window = field(default_factory=_Window)
    credited: _Window = field(default_factory=_Window)  # lots, at their plays' times
    deposits: _Window = field(default_factory=_Window)
    jouer_bought: dict[int, datetime] = field(default_factory=dict)  # play id: its time
    unknown: bool = False  # a record of theirs unreadable: their limits from then on unknown


def check_limits(connection: Connection) -> Check:
    """The check's line for :func:`pharaon.service.audit.run_audit`."""
    players: dict[int, _Player] = {}
    faults: list[Finding] = []
    purchases = deposits = unread = 0
    for seq, at, kind, actor, payload, mode in _records(connection):
        try:
            seen = _replay(players, at, kind, payload, mode)
        except (KeyError, TypeError, ValueError):  # a record the chain's check fails
            unread += 1
            if actor.startswith("player:") and actor[7:].isdigit():
                players.setdefault(int(actor[7:]), _Player()).unknown = True
            continue
        if kind == "purchase":
            purchases += 1
        elif kind == "deposit":
            deposits += 1
        where: dict[str, int | str] = {
            "player": int(payload["player_id"]),
            "seq": seq,
            "at": at.isoformat(),
        }
        faults += [Finding(code, {**where, **figures}) for code, figures in seen]
    if faults:
        more = [found("more_faults", count=len(faults) - _SHOWN)] if len(faults) > _SHOWN else []
        return Check("limits_kept", False, (*faults[:_SHOWN], *more))
    held = found("limits_held", purchases=purchases, deposits=deposits, players=len(players))
    unchecked = [found("records_unread", count=unread)] if unread else []
    return Check("limits_kept", True, (held, *unchecked))


def _replay(
    players: dict[int, _Player],
    at: datetime,
    kind: str,
    payload: dict[str, Any],
    mode: str | None,
) -> list[_Fault]:
    """Replay one record of a player; what it passed, if it was a purchase or a deposit."""
    player = players.setdefault(int(payload["player_id"]), _Player())
    if player.unknown:
        return []
    if kind in ("deposit_limits", "stake_limits", "loss_limit"):
        for period, (amount, pending, effective) in payload.get("limits_after", {}).items():
            since = None if effective is None else datetime.fromisoformat(effective)
            player.rows[period] = (period, amount, pending, since)
        return []
    if kind == "purchase":
        faults = list(_purchase_faults(player, at, payload))
        stake, lot = int(payload["stake_cents"]), int(payload["lot_cents"])
        player.stakes.add(at, stake)
        if mode == Mode.AUTO:
            player.credited.add(at, lot)
        elif lot:  # credited at its fourth grid, if ever (a prize record)
            player.jouer_bought[int(payload["play_id"])] = at
        return faults
    if kind == "prize":
        bought = player.jouer_bought.pop(int(payload["play_id"]), None)
        if bought is not None:
            player.credited.add(bought, int(payload["lot_cents"]))
        return []
    faults = list(_deposit_faults(player, at, payload))  # a deposit
    player.deposits.add(at, int(payload["amount_cents"]))
    return faults


def _purchase_faults(player: _Player, at: datetime, payload: dict[str, Any]) -> Iterator[_Fault]:
    stake = int(payload["stake_cents"])
    rows = limits.in_force(player.rows.values(), at)
    if not rows.moderators_set:
        yield "stake_unmoderated", {"stake": stake}
    for period, span in limits.STAKE_PERIODS.items():
        limit = rows.of(period)
        staked = player.stakes.after(at - span)
        if limit is not None and staked + stake > limit:
            yield (
                "stake_limit",
                {
                    "period": period,
                    "limit": limit,
                    "staked": staked,
                    "span": _span(span),
                    "stake": stake,
                },
            )
    limit = rows.of(limits.LOSS)
    since = limits.loss_window_start(at)
    loss = player.stakes.after(since) - player.credited.after(since)
    if limit is not None and loss + stake > limit:
        yield "loss_limit", {"limit": limit, "loss": loss, "stake": stake}


def _deposit_faults(player: _Player, at: datetime, payload: dict[str, Any]) -> Iterator[_Fault]:
    amount = int(payload["amount_cents"])
    rows = limits.in_force(player.rows.values(), at)
    if not rows.moderators_set:
        yield "deposit_unmoderated", {"amount": amount}
    for period, span in limits.PERIODS.items():
        limit = rows.of(period)
        deposited = player.deposits.after(at - span)
        if limit is not None and deposited + amount > limit:
            yield (
                "deposit_limit",
                {
                    "period": period,
                    "limit": limit,
                    "deposited": deposited,
                    "span": _span(span),
                    "amount": amount,
                },
            )


def _read(payload: str) -> dict[str, Any]:
    """A record's payload; empty if it is not a JSON object (the chain's check fails it)."""
    try:
        parsed = json.loads(payload)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _span(span: timedelta) -> str:
    """The span's word (:data:`pharaon.service.findings.WORDS`)."""
    return "24h" if span == timedelta(hours=24) else f"{span.days}d"


def _records(
    connection: Connection,
) -> Iterator[tuple[int, datetime, str, str, dict[str, Any], str | None]]:
    """The records the check replays, in the log's order: (seq, time, kind, actor, payload,
    and a purchase's mode, read from its play)."""
    last = 0
    while True:
        rows = connection.execute(
            select(
                AuditRecord.seq,
                AuditRecord.created_at,
                AuditRecord.kind,
                AuditRecord.actor,
                AuditRecord.payload,
            )
            .where(AuditRecord.seq > last, AuditRecord.kind.in_(_KINDS))
            .order_by(AuditRecord.seq)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        payloads = [_read(row.payload) for row in rows]
        bought = [
            p["play_id"]
            for (_, _, kind, _, _), p in zip(rows, payloads, strict=True)
            if kind == "purchase" and isinstance(p.get("play_id"), int)
        ]
        modes: dict[int, str] = {}
        if bought:
            modes = {
                int(play_id): str(mode)
                for play_id, mode in connection.execute(
                    select(PlayRow.id, PlayRow.mode).where(
                        PlayRow.id.between(min(bought), max(bought))
                    )
                )
            }
        for (seq, at, kind, actor, _), payload in zip(rows, payloads, strict=True):
            mode = modes.get(payload.get("play_id", 0)) if kind == "purchase" else None
            yield int(seq), at, str(kind), str(actor), payload, mode
        last = int(rows[-1][0])
