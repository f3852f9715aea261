"""A player seen from the back office (service/player_view.py), on both databases: found by a
part of the e-mail (``%`` and ``_`` taken literally), and the player's file: balance, plays and
ledger lines newest first, the limits and the exclusion in force."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import Engine

from pharaon.game.modes import Mode
from pharaon.service import accounts, limits, player_view, plays
from pharaon.service.clock import utcnow
from pharaon.service.errors import NotFoundError
from pharaon.service.orders import Order
from pharaon.store.engine import make_sessionmaker
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player, password_hash


def _register(db: Transactions, email: str) -> int:
    return db.write(
        accounts.register,
        email=email,
        password_hash=password_hash(),
        birth_date=date(1980, 1, 1),
        now=utcnow(),
    ).player_id


def _search(db: Transactions, text: str) -> list[str]:
    return [line.email for line in db.read(player_view.search, email=text, now=utcnow())]


def test_search_by_a_part_of_the_email(db: Transactions) -> None:
    for email in ("ana@example.org", "banana@example.org", "a_b@example.org", "axb@example.org",
                  "100%@example.org", "bob@mail.example"):  # fmt: skip
        _register(db, email)
    assert _search(db, "ANA") == ["ana@example.org", "banana@example.org"]
    assert _search(db, " ana@ ") == ["ana@example.org", "banana@example.org"]
    assert _search(db, "a_b") == ["a_b@example.org"]  # not axb
    assert _search(db, "_") == ["a_b@example.org"]
    assert _search(db, "%") == ["100%@example.org"]
    assert _search(db, "mail.") == ["bob@mail.example"]
    assert _search(db, "carol") == []
    assert _search(db, "") == sorted(_search(db, "@"))
    assert len(_search(db, "")) == 6


def test_search_finds_at_most_50_by_email(db: Transactions) -> None:
    for n in range(52):
        _register(db, f"p{n:02d}@example.org")
    assert _search(db, "example") == [f"p{n:02d}@example.org" for n in range(50)]


def test_a_search_line_shows_the_balance_and_the_exclusion_in_force(
    engine: Engine, db: Transactions
) -> None:
    ana = funded_player(make_sessionmaker(engine), "ana", 1_234)
    now = utcnow()
    until = db.write(limits.self_exclude, player_id=ana, days=2, now=now)
    [line] = db.read(player_view.search, email="ana", now=now)
    assert (line.player_id, line.email, line.balance_cents) == (ana, "ana@example.org", 1_234)
    assert line.self_excluded_until == until
    [later] = db.read(player_view.search, email="ana", now=until)
    assert later.self_excluded_until is None


def test_the_player_s_file(engine: Engine, db: Transactions, load: BlockLoader) -> None:
    block = load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    funded_player(factory, "bob", 1_000)
    now = utcnow()
    db.write(
        limits.set_limits,
        player_id=ana,
        changes={"daily": 500, "weekly": 10**9, "monthly": None},  # the moderator, kept
        now=now,
    )
    sold = [
        buy(factory, [Order(ana, 100, Mode.AUTO if n % 2 else Mode.JOUER, f"k{n}")])[0]
        for n in range(4)
    ]
    views = [p for p in sold if isinstance(p, plays.PlayView)]
    assert len(views) == 4
    found = db.read(player_view.player_file, player_id=ana, now=now)
    balance = db.read(player_view.search, email="ana@", now=now)[0].balance_cents
    assert found.player.balance_cents == balance
    assert found.player.self_excluded_until is None
    assert [(p.play_id, p.block_id, p.stake_cents) for p in found.plays] == [
        (v.play_id, block, 100) for v in reversed(views)
    ]
    assert [p.serial for p in found.plays] == [v.serial for v in reversed(views)]
    # Every movement of the player's money, newest first; they add up to the balance.
    assert sum(line.amount_cents for line in found.ledger) == balance
    ids = [line.transaction_id for line in found.ledger]
    assert ids == sorted(ids, reverse=True)
    assert [line.kind for line in found.ledger][-1] == "deposit"
    assert found.ledger[-1].amount_cents == 1_000
    assert [line.amount_cents for line in found.ledger].count(-100) == 4
    assert found.limits == limits.Limits(500, 10**9, None, (), stake_weekly_cents=10**9)
    # The last ``last`` of each.
    short = db.read(player_view.player_file, player_id=ana, now=now, last=2)
    assert short.plays == found.plays[:2]
    # (A purchase's entries share its transaction, in no promised order; the last purchase
    # has one or two of the player's, and the one before it one.)
    assert sorted(short.ledger, key=repr) == sorted(found.ledger[:2], key=repr)


def test_no_such_player(db: Transactions) -> None:
    with pytest.raises(NotFoundError):
        db.read(player_view.player_file, player_id=12_345, now=utcnow())
