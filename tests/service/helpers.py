"""Helpers shared by the service tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from sqlalchemy.orm import Session

from pharaon.service import accounts, wallet
from pharaon.service.clock import utcnow


def funded_player(sessions: Callable[[], Session], name: str, deposit_cents: int) -> int:
    """A new player ``name``@example.org with ``deposit_cents`` deposited; its id."""
    with sessions() as session:
        player_id = accounts.register(
            session=session,
            email=f"{name}@example.org",
            password="long enough",
            birth_date=date(1980, 1, 1),
            now=utcnow(),
        ).player_id
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
