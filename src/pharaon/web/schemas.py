"""The API's request and answer bodies (docs/api.md), apart from the database tables."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from pharaon.service.limits import Limits
from pharaon.service.plays import PlayView

Cents = StrictInt


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PlayerIn(_In):
    model_config = ConfigDict(extra="forbid", strict=False)  # birth_date comes as a string

    email: StrictStr = Field(max_length=254)
    password: StrictStr = Field(max_length=256)
    birth_date: date


class PlayerOut(BaseModel):
    player_id: int
    email: str


class LoginIn(_In):
    email: StrictStr = Field(max_length=254)
    password: StrictStr = Field(max_length=256)


class SessionOut(BaseModel):
    token: str
    csrf_token: str
    expires_at: datetime


class LimitsIn(_In):
    daily_cents: Cents | None = Field(ge=0, le=10**12)
    weekly_cents: Cents | None = Field(ge=0, le=10**12)
    monthly_cents: Cents | None = Field(ge=0, le=10**12)


class PendingOut(BaseModel):
    period: str  # daily, weekly or monthly
    amount_cents: int | None
    effective_at: datetime


class LimitsOut(BaseModel):
    daily_cents: int | None
    weekly_cents: int | None
    monthly_cents: int | None
    pending: list[PendingOut]

    @classmethod
    def of(cls, limits: Limits) -> LimitsOut:
        return cls(
            daily_cents=limits.daily_cents,
            weekly_cents=limits.weekly_cents,
            monthly_cents=limits.monthly_cents,
            pending=[
                PendingOut(
                    period=p.period, amount_cents=p.amount_cents, effective_at=p.effective_at
                )
                for p in limits.pending
            ],
        )


class MeOut(BaseModel):
    email: str
    balance_cents: int
    limits: LimitsOut
    self_excluded_until: datetime | None


class SelfExclusionIn(_In):
    days: StrictInt = Field(ge=1, le=3650)


class DepositIn(_In):
    amount_cents: Cents = Field(ge=1, le=100_000_000)


class DepositOut(BaseModel):
    deposit_id: int
    amount_cents: int
    balance_cents: int


class PlayIn(_In):
    # Checked by the sale (422 for another amount); Literal would let 100.0 through.
    stake_cents: StrictInt = Field(json_schema_extra={"enum": [100, 200, 300]})
    mode: Literal["jouer", "auto"]


class RevealIn(_In):
    grid: StrictInt = Field(ge=1, le=4)


class CombinationOut(BaseModel):
    kind: Literal["line", "bonus"]
    symbol: str
    grid: int | None
    cells: list[list[int]]
    gain_cents: int


class PlayOut(BaseModel):
    play_id: int
    created_at: datetime
    stake_cents: int
    mode: Literal["jouer", "auto"]
    serial: int
    block_id: int
    grids: list[str | None]
    finished: bool
    bonus: str | None
    combinations: list[CombinationOut] | None
    prize_cents: int | None
    ticket: str | None
    balance_before_cents: int
    balance_after_cents: int | None

    @classmethod
    def of(cls, play: PlayView) -> PlayOut:
        combinations: list[Any] | None = (
            None if play.combinations is None else list(play.combinations)
        )
        return cls.model_validate(
            {
                "play_id": play.play_id,
                "created_at": play.created_at,
                "stake_cents": play.stake_cents,
                "mode": play.mode,
                "serial": play.serial,
                "block_id": play.block_id,
                "grids": list(play.grids),
                "finished": play.finished,
                "bonus": play.bonus,
                "combinations": combinations,
                "prize_cents": play.prize_cents,
                "ticket": play.ticket,
                "balance_before_cents": play.balance_before_cents,
                "balance_after_cents": play.balance_after_cents,
            }
        )


class PlayPage(BaseModel):
    plays: list[PlayOut]
    next_before: int | None


class RemainingOut(BaseModel):
    prize_cents: int
    remaining: int


class SymbolOut(BaseModel):
    code: str
    name: str
    name_en: str
    line_cents: int
    bonus_cents: int | None


class PrizeOut(BaseModel):
    lots: int
    amount_cents: int
    cumulation_only: bool


class RulesOut(BaseModel):
    symbols: list[SymbolOut]
    prices_cents: list[int]
    prizes: list[PrizeOut]


class HealthOut(BaseModel):
    status: Literal["ok"]


class ErrorOut(BaseModel):
    """Every error's body: a stable code and a sentence for people."""

    error: str
    detail: str


# What any /api/v1 route may answer besides its success: the one error shape. 500 is left out
# on purpose: the fuzzing test holds it for a bug.
_ERROR_STATUSES = {
    400: "Bad request",
    401: "Not logged in",
    402: "Insufficient funds",
    403: "Forbidden (CSRF, age, self-exclusion, limits)",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Body too large",
    422: "Invalid input",
    429: "Too many attempts: locked out for a while",
    503: "Sold out, or the database is unavailable: try again later",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text} for status, text in _ERROR_STATUSES.items()
}
