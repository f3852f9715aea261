"""Helpers shared by the service tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from functools import cache

from sqlalchemy.orm import Session

from pharaon.service import accounts, limits, logins, passwords, sales, wallet
from pharaon.service.clock import utcnow
from pharaon.service.errors import ServiceError, UnauthorizedError
from pharaon.service.orders import Order, SoldPlay
from pharaon.service.plays import PlayView
from pharaon.service.sessions import NewSession
from pharaon.store.transactions import Transactions

PASSWORD = "long enough"


@cache
def password_hash() -> str:
    """The hash of :data:`PASSWORD`, made once: argon2 is slow on purpose."""
    return passwords.hash_password(PASSWORD)


def funded_player(
    sessions: Callable[[], Session], name: str, deposit_cents: int, *, moderators: bool = True
) -> int:
    """A new player ``name``@example.org (password :data:`PASSWORD`) with ``deposit_cents``
    deposited, its moderators set first (:func:`set_moderators`) unless ``moderators`` is
    false; its id."""
    with sessions() as session:
        player_id = accounts.register(
            session=session,
            email=f"{name}@example.org",
            password_hash=password_hash(),
            birth_date=date(1980, 1, 1),
            now=utcnow(),
        ).player_id
        if moderators:
            set_moderators(session, player_id)
        if deposit_cents:
            wallet.deposit(
                session=session,
                player_id=player_id,
                amount_cents=deposit_cents,
                idempotency_key="first",
                now=utcnow(),
            )
        session.commit()
    return player_id


def set_moderators(session: Session, player_id: int, cents: int = 10**9) -> None:
    """Set the player's moderators (weekly deposit and stake ceilings of ``cents``), as a new
    account does before its first deposit."""
    limits.set_limits(
        session=session,
        player_id=player_id,
        changes={"weekly": cents, "stake_weekly": cents},
        now=utcnow(),
    )


Outcome = PlayView | ServiceError


def buy(
    sessions: Callable[[], Session], orders: Sequence[Order], now: datetime | None = None
) -> list[Outcome]:
    """Sell ``orders`` in one transaction (as the writer sells a batch): each order's play as
    its buyer sees it, or what refused it."""
    with sessions() as session, session.begin():
        sold = sales.sell(session=session, requests=orders, now=now or utcnow())
    return [s.view() if isinstance(s, SoldPlay) else s for s in sold]


def log_in(
    db: Transactions,
    email: str,
    password: str,
    *,
    client: str | None,
    throttle: logins.Throttle,
    now: datetime,
) -> NewSession:
    """A player's log-in in the route's steps (web/routers/sessions.py), without HTTP: counted
    and read, the password checked between transactions, then the session opened or the
    failure counted against the address too."""
    attempt = db.write(
        accounts.begin_log_in,
        email=accounts.login_email(email),
        client=client,
        throttle=throttle,
        now=now,
    )
    if isinstance(attempt, ServiceError):
        raise attempt
    if not passwords.verify_password(attempt.password_hash, password):
        db.write(logins.failed, keys=attempt.keys)
        raise UnauthorizedError(accounts.WRONG)
    return db.write(accounts.finish_log_in, attempt=attempt, now=now)
