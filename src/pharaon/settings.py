"""The one place configuration is read: environment variables prefixed ``PHARAON_``, for the
server (``web/``) and the commands (``cli/``); the rooms below them are given what they need."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

_PROJECT = Path(__file__).resolve().parents[2]


def _var() -> Path:
    # Under the project when run from a checkout, else under the current directory.
    base = _PROJECT if (_PROJECT / "pyproject.toml").exists() else Path.cwd()
    return base / "var"


def default_database_url() -> str:
    return f"sqlite:///{_var() / 'pharaon.db'}"


class Settings(BaseSettings):
    """Server and operator settings; every field can be set as ``PHARAON_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PHARAON_", extra="ignore")

    database_url: str = default_database_url()
    # The operator's id in the regulator's trace (service/traces.py).
    operator_id: str = Field(default="pharaon", min_length=1, max_length=64)
    # Where `serve`'s first start keeps the vendor and operator key files of its blocks.
    keys_dir: Path = _var() / "keys"
    # The audit log's name in its signed checkpoints (c2sp.org/tlog-checkpoint origin line), also
    # the name of the key that signs them (checkpoints.key in keys_dir): unique to this log.
    log_origin: str = Field(default="pharaon/audit-log", pattern=r"^[!-*,-~]+$", max_length=100)
    # The witnesses whose cosignatures of the checkpoints the server accepts and publishes:
    # their verifier keys (name+keyid+base64, type 0x04), comma-separated (docs/proofs.md).
    witness_keys: str = ""
    allow_test_blocks: bool = False
    session_idle_minutes: int = 30
    lockout_failures: int = 5
    lockout_minutes: int = 15
    cookie_secure: bool = False
    # The argon2id parameters of new password hashes (service/passwords.py). The other value
    # exists for the test suite alone: its hashes cost nothing to make, or to break.
    password_hashing: Literal["production", "fast-insecure-for-tests"] = "production"
    # Client addresses that may read /metrics (comma-separated): the monitoring host. Behind
    # a proxy (serve --forwarded-allow-ips) it is the address the proxy forwards.
    metrics_allow_ips: str = "127.0.0.1,::1"
    # Failed log-ins from one address, across accounts, before it is locked out for a while.
    lockout_address_failures: int = 20
    # Threads per server process that serve the reads, and the writes (one on SQLite), waiting
    # at the database's doors (web/database.py); each holds a database connection.
    readers: int = 4
    writers: int = 4
    # How long a request waits for the database, in seconds: past it, the statement or the
    # COMMIT running is cancelled and the answer is 503 unavailable (docs/architecture.md,
    # "Every wait has a deadline"). The operator's slow work (a block loaded or verified, the
    # audit, an export) has the second.
    db_deadline_seconds: float = Field(default=10.0, gt=0, le=3600)
    db_slow_deadline_seconds: float = Field(default=600.0, gt=0, le=86400)
    # Runs a block's sale order is cut into when it is loaded: that many purchases at one
    # price lock that many rows at the same moment, not one (service/runs.py).
    sale_runs: int = 8
    # The operator's alerts (service/stock.py): stock lasting fewer hours at the last day's
    # pace, or fewer units, at a price; a day's payout this many standard deviations from the
    # planned one; a lot of at least this many cents.
    stock_alert_hours: float = 48.0
    stock_alert_units: int = 100_000
    payout_band_sigmas: float = 3.0
    large_lot_cents: int = 100_000
    # A jouer play not fully uncovered this many days after its purchase is finished by the
    # server, its lot credited (service/plays.py).
    jouer_finish_days: float = Field(default=7.0, gt=0)
    # A raised (or removed) deposit, stake or loss limit applies this many hours after it was
    # asked; a lowered one at once (service/limits.py; docs/rules.md §6).
    limit_raise_hours: float = Field(default=48.0, ge=0)
    # An account whose identity no operator has checked this many days after it was opened is
    # suspended for play until it is (service/identity.py; decree 2010-518: docs/rules.md §7).
    identity_days: float = Field(default=30.0, gt=0)
    # A withdrawal of more cents than this waits for an admin's approval; up to it, it is paid
    # at once (service/withdrawals.py).
    withdrawal_approval_cents: int = Field(default=100_000, ge=0)


def refused(exc: ValidationError) -> str:
    """The one line that says which ``PHARAON_*`` variable the settings refused, and why."""
    first = exc.errors()[0]
    name = "PHARAON_" + "_".join(str(p) for p in first["loc"]).upper()
    return f"{name}: {first['msg']}"
