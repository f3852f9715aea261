"""The banned-gamblers list (service/banned.py), on both databases: a file read line by line
and refused whole at its first wrong line; a load replacing the list in one transaction,
audited without a name; names matched normalised; a match refused at the identity check and
suspended; the daily check suspending each match once, on one server or two at once."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import pytest
from sqlalchemy import Engine, func, insert, select

from pharaon.game.modes import Mode
from pharaon.service import banned, identity, standing
from pharaon.service.clock import utcnow
from pharaon.service.errors import InvalidError, SuspendedError
from pharaon.service.orders import Order
from pharaon.store.engine import make_engine, make_sessionmaker
from pharaon.store.tables import AuditRecord, BannedGambler, BannedList, Player
from pharaon.store.transactions import Transactions
from tests.conftest import BlockLoader
from tests.service.helpers import buy, funded_player
from tests.service.test_identity import verify
from tests.service.test_measures import _operator, _take

HEADER = "last_name,first_names,birth_date\n"
# funded_player's birth date, and the names test_identity's document gives (Dupont, Anne Marie).
LIST = (
    HEADER
    + "DUPONT,Anne-Marie,1980-01-01\n"
    + "Lefèvre,Éloïse,1975-03-02\n"
    + "\n"
    + "D'Artagnan,Charles,1611-01-01\n"
).encode()


def _load(db: Transactions, data: bytes = LIST) -> int:
    return db.write(
        banned.load, listed=banned.read_list(data), actor="operator:admin@example.org", now=utcnow()
    )


def _audit(db: Transactions, kind: str) -> list[tuple[str, dict[str, object]]]:
    rows = db.read(
        lambda connection: connection.execute(
            select(AuditRecord.actor, AuditRecord.payload)
            .where(AuditRecord.kind == kind)
            .order_by(AuditRecord.seq)
        ).all()
    )
    return [(actor, json.loads(payload)) for actor, payload in rows]


def _entries(db: Transactions) -> list[tuple[str, str, date]]:
    return sorted(
        db.read(
            lambda connection: connection.execute(
                select(BannedGambler.last_name, BannedGambler.first_names, BannedGambler.birth_date)
            ).all()
        )
    )


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("Dupont", "dupont"),
        ("  DUPONT  ", "dupont"),
        ("Éloïse", "eloise"),
        ("Jean-Pierre", "jeanpierre"),
        ("jean   pierre", "jeanpierre"),
        ("Jean – Pierre", "jeanpierre"),
        ("D'Artagnan", "dartagnan"),
        ("d’artagnan", "dartagnan"),
        ("Œdipe", "oedipe"),
        ("Straße", "strasse"),
        ("ÇAĞLAR", "caglar"),
        # Issue 37: every character that is not a letter dropped, whatever it is.
        ("Dupont_Moretti", "dupontmoretti"),
        ("Dupont.Moretti", "dupontmoretti"),
        ("Dupont/Moretti (2)", "dupontmoretti"),
        ("Dupont\u00a0Moretti", "dupontmoretti"),  # a no-break space
        ("Ｄｕｐｏｎｔ", "dupont"),  # full-width letters
        ("ﬁliol", "filiol"),  # the « fi » ligature
        ("Ĳsselmeer", "ijsselmeer"),
        ("Dupont\u0301", "dupont"),  # a combining accent typed apart
        ("42 _-'.", ""),
    ],
)
def test_names_are_compared_normalised(written: str, key: str) -> None:
    assert banned.name_key(written) == key
    assert banned.name_key(key) == key  # a key is its own key


# The ways a clerk or a file may write « Dupont-Moretti », « Dupont » and « Éloïse ».
VARIANTS = [
    ("Dupont_Moretti", "Éloïse"),
    ("dupont-moretti", "eloise"),
    ("DUPONT MORETTI", "ELOISE"),
    ("Dupont.Moretti", "Eloïse"),
    ("Dupont'Moretti", "Éloïse."),
    ("Dupont’Moretti", "É-loïse"),
    ("Dûpont Morétti", "Èloîse"),
    ("Ｄｕｐｏｎｔ－Ｍｏｒｅｔｔｉ", "Ｅｌｏｉｓｅ"),
    ("Dupont-Moretti 2", "Eloise*"),
    ("  dupont -- moretti ", "e l o i s e"),
]
NEAR_MISSES = [
    ("Dupond-Moretti", "Éloïse"),  # a letter differs
    ("Dupont-Moreti", "Éloïse"),  # a letter fewer
    ("Dupont-Moretti", "Héloïse"),  # a letter more
    ("Moretti-Dupont", "Éloïse"),  # the same letters in another order
]


def _listed(db: Transactions, last: str, first: str, born: date = date(1980, 1, 1)) -> bool:
    return db.read(banned.is_listed, last_name=last, first_names=first, birth_date=born)


def test_a_name_is_found_however_written_and_not_a_letter_apart(db: Transactions) -> None:
    for on_list in ("Dupont-Moretti", "DUPONT_MORETTI", "dupont.moretti"):
        _load(db, (HEADER + f"{on_list},Éloïse,1980-01-01\n").encode())
        found = {(last, first): _listed(db, last, first) for last, first in VARIANTS}
        assert found == dict.fromkeys(VARIANTS, True), on_list
        missed = {(last, first): _listed(db, last, first) for last, first in NEAR_MISSES}
        assert missed == dict.fromkeys(NEAR_MISSES, False), on_list
        assert not _listed(db, *VARIANTS[0], date(1980, 1, 2))  # another birth date


def test_a_list_loaded_with_the_old_keys_still_matches(db: Transactions) -> None:
    """Keys written before name_key dropped every non-letter (« dupont_moretti »): the names
    are compared through name_key on both sides, so they match until the list is loaded
    again."""
    db.write(
        lambda session: session.execute(
            insert(BannedGambler).values(
                last_name="dupont_moretti", first_names="eloise", birth_date=date(1980, 1, 1)
            )
        )
    )
    assert _listed(db, "Dupont Moretti", "Éloïse")


def test_a_file_is_read_into_distinct_entries() -> None:
    listed = banned.read_list(b"\xef\xbb\xbf" + LIST + b"dupont,anne marie,1980-01-01\n")
    assert listed.rows == 4
    assert listed.entries == (
        banned.Entry("dartagnan", "charles", date(1611, 1, 1)),
        banned.Entry("lefevre", "eloise", date(1975, 3, 2)),
        banned.Entry("dupont", "annemarie", date(1980, 1, 1)),
    )
    assert len(listed.sha256) == 64


@pytest.mark.parametrize(
    ("data", "line", "why"),
    [
        (b"", 1, "header"),
        (b"nom,prenoms,naissance\nDupont,Anne,1980-01-01\n", 1, "header"),
        (HEADER.encode() + b"Dupont,Anne,1980-01-01\n,Anne,1980-01-01\n", 3, "last_name is empty"),
        (HEADER.encode() + b"Dupont, - ,1980-01-01\n", 2, "first_names is empty"),
        (HEADER.encode() + b"Dupont,Anne,01/01/1980\n", 2, "YYYY-MM-DD"),
        (HEADER.encode() + b"Dupont,Anne,1980-02-30\n", 2, "YYYY-MM-DD"),
        (HEADER.encode() + b"Dupont,Anne,19800101\n", 2, "YYYY-MM-DD"),
        (HEADER.encode() + b"\nDupont,Anne\n", 3, "3 fields expected"),
        (HEADER.encode() + b"Dupont,Anne,1980-01-01,x\n", 2, "got 4"),
        (HEADER.encode() + b"Dupont,Anne,1980-01-01\nL\xe9vy,Anne,1980-01-01\n", 3, "UTF-8"),
        (HEADER.encode() + b'"Dupont,Anne,1980-01-01\n', 2, "line 2"),
    ],
)
def test_a_malformed_file_is_refused_naming_its_line(data: bytes, line: int, why: str) -> None:
    with pytest.raises(InvalidError, match=rf"^line {line}: ") as refused:
        banned.read_list(data)
    assert why in refused.value.detail
    assert "\n" not in refused.value.detail


def test_a_load_replaces_the_list_and_is_audited_without_names(db: Transactions) -> None:
    assert _load(db) == 3
    assert ("dupont", "annemarie", date(1980, 1, 1)) in _entries(db)
    second = (HEADER + "Martin,Paul,1990-05-17\n").encode()
    assert _load(db, second) == 1
    assert _entries(db) == [("martin", "paul", date(1990, 5, 17))]
    records = _audit(db, "banned_list_loaded")
    assert [r for _, r in records] == [
        {"rows": 3, "entries": 3, "sha256": banned.read_list(LIST).sha256},
        {"rows": 1, "entries": 1, "sha256": banned.read_list(second).sha256},
    ]
    assert all(actor == "operator:admin@example.org" for actor, _ in records)
    assert "martin" not in json.dumps(records).lower()
    state = db.read(
        lambda connection: connection.execute(
            select(BannedList.entries, BannedList.checked_at)
        ).one()
    )
    assert tuple(state) == (1, None)  # the next look of the chores checks against it


def test_a_load_that_fails_changes_nothing(engine: Engine, db: Transactions) -> None:
    _load(db)
    before = _entries(db)

    def failing(session: object, **kw: object) -> None:
        banned.load(session=session, **kw)  # type: ignore[arg-type]
        raise RuntimeError("the disk is full")

    with pytest.raises(RuntimeError):
        db.write(
            failing,
            listed=banned.read_list((HEADER + "Martin,Paul,1990-05-17\n").encode()),
            actor="test",
            now=utcnow(),
        )
    assert _entries(db) == before
    assert len(_audit(db, "banned_list_loaded")) == 1


def test_a_person_on_the_list_is_refused_at_the_identity_check(
    engine: Engine, db: Transactions, load: BlockLoader
) -> None:
    load(100, size=30)
    factory = make_sessionmaker(engine)
    ana = funded_player(factory, "ana", 1_000)
    bob = funded_player(factory, "bob", 1_000)
    admin = _operator(db)
    _load(db)
    refused = verify(db, ana, admin, last_name="dupont", first_names="ANNE MARIE")
    assert isinstance(refused, banned.BannedError)
    assert refused.code == "banned"
    found = db.read(standing.look_up, player_id=ana, now=utcnow())
    assert (found.verified_at, found.suspended, found.suspended_until) == (None, True, None)
    assert db.read(identity.check_of, player_id=ana) is None
    [no_sale] = buy(factory, [Order(ana, 100, Mode.AUTO, "a1")])
    assert isinstance(no_sale, SuspendedError)  # the player is told: suspended, no more
    assert "banned" not in no_sale.detail
    assert "list" not in no_sale.detail
    assert _audit(db, "player_banned") == [
        (
            "operator:admin@example.org",
            {
                "player_id": ana,
                "session_id": "0123456789abcdef",
                "address": "203.0.113.7",
                "check": "identity_check",
            },
        )
    ]
    # Another name, or the same with another birth date, is verified.
    assert isinstance(verify(db, bob, admin, first_names="Anne"), identity.Document)


def _verified(db: Transactions, engine: Engine, admin: int, name: str, first_names: str) -> int:
    """A new player ``name`` verified as Dupont ``first_names`` born 1980-01-01."""
    player = funded_player(make_sessionmaker(engine), name, 0)
    checked = verify(db, player, admin, last_name="Dupont", first_names=first_names)
    assert isinstance(checked, identity.Document)
    return player


def test_the_daily_check_suspends_each_match_once(engine: Engine, db: Transactions) -> None:
    admin = _operator(db)
    ana = _verified(db, engine, admin, "ana", "Anne-Marie")  # verified before the list came
    bob = _verified(db, engine, admin, "bob", "Paul")
    cid = _verified(db, engine, admin, "cid", "Anne Marie")  # closed meanwhile
    _take(db, admin, cid, "close")
    now = utcnow()
    assert db.write(banned.check_if_due, now=now) == 0  # an empty list
    _load(db)
    assert db.write(banned.check_if_due, now=now) == 1
    assert db.write(banned.check_if_due, now=now + timedelta(hours=1)) == 0  # not due
    found = db.read(standing.look_up, player_id=ana, now=utcnow())
    assert (found.suspended, found.suspended_until) == (True, None)
    assert not db.read(standing.look_up, player_id=bob, now=utcnow()).suspended
    # An operator lifts it (a namesake): the next day's check does not suspend again.
    _take(db, admin, ana, "lift", reason="a namesake: checked with the ministry")
    assert db.write(banned.check_if_due, now=now + timedelta(days=1)) == 0
    assert not db.read(standing.look_up, player_id=ana, now=utcnow()).suspended
    assert db.write(banned.check_players, actor="operator:admin@example.org", now=now) == []
    assert _audit(db, "player_banned") == [("server", {"player_id": ana, "check": "daily_check"})]
    banned_at = db.read(
        lambda connection: connection.execute(
            select(Player.id).where(Player.banned_at.is_not(None))
        ).all()
    )
    assert [p for (p,) in banned_at] == [ana]


def test_the_daily_check_finds_a_name_however_written(engine: Engine, db: Transactions) -> None:
    admin = _operator(db)
    ana = _verified(db, engine, admin, "ana", "Anne_Marie")  # on the list as Anne-Marie
    _verified(db, engine, admin, "bob", "Anne_Maria")  # a letter apart
    cid = _verified(db, engine, admin, "cid", "ＡＮＮＥ．ＭＡＲＩＥ")
    _load(db)
    assert db.write(banned.check_players, actor="server", now=utcnow()) == sorted([ana, cid])


def test_two_servers_checking_at_once_suspend_once(
    engine: Engine, db: Transactions, database_url: str
) -> None:
    admin = _operator(db)
    ana = _verified(db, engine, admin, "ana", "Anne-Marie")
    bob = _verified(db, engine, admin, "bob", "Paul")
    _load(db)
    other = make_engine(database_url, create=False)
    barrier = threading.Barrier(2)
    later = utcnow() + timedelta(days=1)

    def check(e: Engine, every: timedelta | None) -> list[int] | None:
        with make_sessionmaker(e)() as session:
            barrier.wait(10)
            found = banned.check_players(session=session, actor="server", now=later, every=every)
            time.sleep(0.2)  # held, so the other waits on the row
            session.commit()
            return found

    try:
        with ThreadPoolExecutor(2) as pool:
            due = list(pool.map(check, (engine, other), (banned.DAY, banned.DAY)))
        assert due.count(None) == 1
        assert [ana] in due
        # Run by hand on both (`pharaon banned check`): each checks, one suspends.
        _load(db, LIST + b"Dupont,Paul,1980-01-01\n")
        with ThreadPoolExecutor(2) as pool:
            forced = list(pool.map(check, (engine, other), (None, None)))
        assert [] in forced
        assert [bob] in forced
    finally:
        other.dispose()
    assert [r["player_id"] for _, r in _audit(db, "player_banned")] == [ana, bob]
    count = db.read(
        lambda connection: connection.execute(
            select(func.count()).select_from(Player).where(Player.banned_at.is_not(None))
        ).scalar_one()
    )
    assert count == 2
