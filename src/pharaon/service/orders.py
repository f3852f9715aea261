"""An order for one unit, and what becomes of it: sold (a :class:`SoldPlay`), a replay of the
play its idempotency key already bought, or refused with a :class:`ServiceError`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pharaon.game.modes import Mode
from pharaon.game.rules import rules
from pharaon.service import idempotency, limits
from pharaon.service.errors import InsufficientFundsError, InvalidError, ServiceError, SoldOutError
from pharaon.service.plays import ALL_GRIDS, PlayView, build_view


@dataclass(frozen=True, slots=True)
class Order:
    """A player's request for one unit at ``stake_cents``, played in ``mode``."""

    player_id: int
    stake_cents: int
    mode: Mode
    idempotency_key: str | None

    @property
    def digest(self) -> str:
        """What the idempotency key stands for: a retry must ask for the same."""
        return idempotency.request_digest(
            "play", {"stake_cents": self.stake_cents, "mode": self.mode}
        )

    @property
    def revealed(self) -> int:
        """The grids uncovered when the play is recorded: all of them in ``auto``."""
        return ALL_GRIDS if self.mode == Mode.AUTO else 0


def check(order: Order) -> str:
    """The order's idempotency key, once the order is known to be well formed."""
    key = idempotency.check_key(order.idempotency_key)
    try:
        rules().multiplier(order.stake_cents)
    except ValueError as exc:
        raise InvalidError(str(exc)) from exc
    if order.mode not in tuple(Mode):
        modes = " or ".join(repr(m.value) for m in Mode)
        raise InvalidError(f"mode must be {modes}, got {order.mode!r}")
    return key


@dataclass(frozen=True, slots=True)
class UnitSale:
    """A unit sold to the order at ``index`` of its batch: what its play records."""

    index: int
    order: Order
    key_id: int
    account_id: int
    balance_before: int
    balance_after: int
    block_id: int
    serial: int
    lot_cents: int
    cells: bytes

    def columns(self) -> dict[str, Any]:
        """Its play's columns in ``plays`` (but for the player, the ledger transaction and
        the time)."""
        return {
            "stake_cents": self.order.stake_cents,
            "mode": self.order.mode,
            "serial": self.serial,
            "block_id": self.block_id,
            "revealed": self.order.revealed,
            "prize_cents": self.lot_cents,
            "balance_before_cents": self.balance_before,
            "balance_after_cents": self.balance_after,
        }


@dataclass(frozen=True, slots=True)
class SoldPlay:
    """A play just sold (the sales desk hands it over once committed); :meth:`view` builds
    what the player sees of it (the desk leaves that to the buyer's thread, so its own goes on
    to the next batch)."""

    play_id: int
    created_at: datetime
    stake_cents: int
    mode: Mode
    serial: int
    block_id: int
    revealed: int
    prize_cents: int
    balance_before_cents: int
    balance_after_cents: int
    cells: bytes

    @classmethod
    def of(cls, sale: UnitSale, play_id: int, now: datetime) -> SoldPlay:
        return cls(
            play_id=play_id,
            created_at=now,
            stake_cents=sale.order.stake_cents,
            mode=sale.order.mode,
            serial=sale.serial,
            block_id=sale.block_id,
            revealed=sale.order.revealed,
            prize_cents=sale.lot_cents,
            balance_before_cents=sale.balance_before,
            balance_after_cents=sale.balance_after,
            cells=sale.cells,
        )

    def view(self) -> PlayView:
        return build_view(
            play_id=self.play_id,
            created_at=self.created_at,
            stake_cents=self.stake_cents,
            mode=self.mode,
            serial=self.serial,
            block_id=self.block_id,
            revealed=self.revealed,
            prize_cents=self.prize_cents,
            balance_before_cents=self.balance_before_cents,
            balance_after_cents=self.balance_after_cents,
            cells=self.cells,
        )


Outcome = PlayView | ServiceError
Sale = SoldPlay | PlayView | ServiceError  # as Outcome, the new play not yet viewed


@dataclass(frozen=True, slots=True)
class Unsold:
    """The orders of a batch that are not sold now: refused (index: the error), and retries
    answered by their earlier play (index, player id, play id)."""

    refused: dict[int, ServiceError] = field(default_factory=dict)
    replays: list[tuple[int, int, int]] = field(default_factory=list)


def not_debited(
    order: Order, excluded_until: datetime | None, pause_kind: str | None, now: datetime
) -> ServiceError:
    """Why the stake of ``order`` was not debited: the player is on a pause (a cool-off or a
    self-exclusion, ``pause_kind``), or else the balance is short."""
    try:
        limits.check_not_excluded(excluded_until, now, kind=pause_kind)
    except ServiceError as exc:
        return exc
    return InsufficientFundsError(
        f"the balance is less than the stake of {order.stake_cents} cents"
    )


def sold_out(order: Order) -> ServiceError:
    return SoldOutError(f"no unit is left on sale at {order.stake_cents} cents")
