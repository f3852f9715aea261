"""The one place configuration is read: environment variables prefixed ``PHARAON_``."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

_PROJECT = Path(__file__).resolve().parents[3]


def _var() -> Path:
    # Under the project when run from a checkout, else under the current directory.
    base = _PROJECT if (_PROJECT / "pyproject.toml").exists() else Path.cwd()
    return base / "var"


def _default_database_url() -> str:
    return f"sqlite:///{_var() / 'pharaon.db'}"


class Settings(BaseSettings):
    """Server and operator settings; every field can be set as ``PHARAON_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PHARAON_", extra="ignore")

    database_url: str = _default_database_url()
    # Where `serve`'s first start keeps the vendor and operator key files of its blocks.
    keys_dir: Path = _var() / "keys"
    allow_test_blocks: bool = False
    session_idle_minutes: int = 30
    lockout_failures: int = 5
    lockout_minutes: int = 15
    cookie_secure: bool = False
    # Seconds a client has to send a request's headers before it is disconnected (slowloris).
    header_timeout_seconds: float = 10.0
    # Seconds a client has to send a request's body once it is being read (slow bodies; a
    # block file's upload has 600).
    body_timeout_seconds: float = 30.0
    # Client addresses that may read /metrics (comma-separated): the monitoring host. Behind
    # a proxy (serve --forwarded-allow-ips) it is the address the proxy forwards.
    metrics_allow_ips: str = "127.0.0.1,::1"
    # Failed log-ins from one address, across accounts, before it is locked out for a while.
    lockout_address_failures: int = 20
    # Database connections per worker for the routes' threads (each holds one), besides those
    # of the desks; also how many such threads run at once.
    pool_size: int = 10
