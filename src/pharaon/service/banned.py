"""The ministry's banned-gamblers list (« interdits de jeux », docs/rules.md §7): a person on it
may neither open nor keep an account. The operator loads the list from a CSV file
(``pharaon banned load FILE``); each load replaces the whole list in one transaction. A player
is checked against it when an admin records the names and birth date of their identity
document (service/identity.py :func:`~pharaon.service.identity.verify`), and every verified
player again once a day (:func:`check_players`, by the server's hourly chore and by
``pharaon banned check``).

Names are compared by :func:`name_key` (NFKC, case folded, accents and every character that
is not a letter dropped), birth dates exactly. The list keeps only those keys and the birth
date: what a match needs. The keys are put through :func:`name_key` again when compared, so
a list loaded before it last changed matches as it now says. A match is suspended (the
operator's suspension, service/measures.py, until lifted) and marked banned
(``players.banned_at``), by one conditional statement that only touches players not banned
already: a player is suspended once, whoever runs the check and however many at once. The
player only ever sees ``suspended``, never the list."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import audit, traces
from pharaon.service.errors import ForbiddenError, InvalidError
from pharaon.store.tables import BannedGambler, BannedList, IdentityCheck, Player

HEADER = ("last_name", "first_names", "birth_date")
NAME_MAX = 200  # characters of a name once normalised (BannedGambler's columns)
DAY = timedelta(days=1)
_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# Letters NFKC and NFD leave whole but a clerk's keyboard spells with two.
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "ø": "o", "ł": "l", "đ": "d", "ı": "i"})


class BannedError(ForbiddenError):
    """The person on the identity document is on the banned-gamblers list."""

    code = "banned"


def name_key(text: str) -> str:
    """``text`` as names are compared, on the list and on an identity document alike: Unicode
    NFKC (full-width letters, ligatures such as « ﬁ »), case folded, accents dropped (NFD,
    then no combining mark), and every character that is not a letter dropped: spaces,
    hyphens, apostrophes, dots, underscores, digits, symbols (« Éloïse-Marie d'Arc » and
    « ELOISE_MARIE D ARC » are both ``eloisemariedarc``)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))
    return "".join(c for c in bare.translate(_LIGATURES) if c.isalpha())


@dataclass(frozen=True, slots=True)
class Entry:
    """One person on the list: the keys of the names (:func:`name_key`), the birth date."""

    last_name: str
    first_names: str
    birth_date: date


@dataclass(frozen=True, slots=True)
class ListFile:
    """A list file read: its distinct entries, how many data lines it had, its SHA-256 (hex)."""

    entries: tuple[Entry, ...]
    rows: int
    sha256: str


def read_list(data: bytes) -> ListFile:
    """The list in ``data``: UTF-8 CSV (a byte-order mark allowed), a header line
    ``last_name,first_names,birth_date``, then one person a line, the birth date as
    YYYY-MM-DD; blank lines are skipped. :class:`InvalidError` naming the first wrong line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidError(f"line {line}: not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    entries: set[Entry] = set()
    rows = 0
    try:
        header = next(reader, None)
        if header is None or tuple(cell.strip() for cell in header) != HEADER:
            raise InvalidError(f"line 1: the header must be {','.join(HEADER)}")
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            entries.add(_entry(reader.line_num, cells))
            rows += 1
    except csv.Error as exc:
        raise InvalidError(f"line {reader.line_num}: {exc}") from None
    ordered = tuple(sorted(entries, key=lambda e: (e.birth_date, e.last_name, e.first_names)))
    return ListFile(ordered, rows, hashlib.sha256(data).hexdigest())


def _entry(line: int, cells: list[str]) -> Entry:
    if len(cells) != len(HEADER):
        raise InvalidError(
            f"line {line}: {len(HEADER)} fields expected ({','.join(HEADER)}), got {len(cells)}"
        )
    last, first, born = (cell.strip() for cell in cells)
    keys = []
    for field, value in (("last_name", last), ("first_names", first)):
        key = name_key(value)
        if not key:
            raise InvalidError(f"line {line}: {field} is empty")
        if len(key) > NAME_MAX:
            raise InvalidError(f"line {line}: {field} is longer than {NAME_MAX} letters")
        keys.append(key)
    try:
        if not _ISO_DATE.match(born):
            raise ValueError
        birth_date = date.fromisoformat(born)
    except ValueError:
        raise InvalidError(
            f"line {line}: birth_date must be a date YYYY-MM-DD, got {born[:20]!r}"
        ) from None
    return Entry(keys[0], keys[1], birth_date)


def load(*, session: Session, listed: ListFile, actor: str, now: datetime) -> int:
    """Replace the list by ``listed``'s entries, in the caller's transaction (the caller
    commits), and have the next daily check run at the chores' next look; audited
    ``banned_list_loaded`` with the counts and the file's SHA-256, never a name. How many
    entries the list now has."""
    # The list's row first: two loads at once replace the list one after the other.
    state = {
        "loaded_at": now,
        "entries": len(listed.entries),
        "sha256": listed.sha256,
        "checked_at": None,
    }
    replaced = update(BannedList).where(BannedList.id == 1).values(**state)
    if session.execute(replaced.returning(BannedList.id)).first() is None:
        session.execute(insert(BannedList).values(id=1, **state))
    session.execute(delete(BannedGambler))
    if listed.entries:
        session.execute(
            insert(BannedGambler),
            [
                {"last_name": e.last_name, "first_names": e.first_names, "birth_date": e.birth_date}
                for e in listed.entries
            ],
        )
    audit.append(
        session,
        kind="banned_list_loaded",
        actor=actor,
        payload={"rows": listed.rows, "entries": len(listed.entries), "sha256": listed.sha256},
        now=now,
    )
    return len(listed.entries)


def is_listed(
    connection: Connection, *, last_name: str, first_names: str, birth_date: date
) -> bool:
    """Whether the person of these names and birth date is on the list: the birth date read
    in the database, the names compared here by :func:`name_key`."""
    wanted = (name_key(last_name), name_key(first_names))
    born_that_day = connection.execute(
        select(BannedGambler.last_name, BannedGambler.first_names).where(
            BannedGambler.birth_date == birth_date
        )
    )
    return any(_same(wanted, last, first) for last, first in born_that_day)


def _same(wanted: tuple[str, str], last_name: str, first_names: str) -> bool:
    """Whether ``wanted`` (the keys of a person's names) are the names of a list's entry."""
    return wanted == (name_key(last_name), name_key(first_names))


def ban(
    session: Session,
    *,
    player_ids: Sequence[int],
    actor: str,
    check: str,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> list[int]:
    """Suspend (until lifted) and mark banned those of ``player_ids`` whose account is open and
    not banned already, in one conditional statement; one ``player_banned`` audit record each,
    saying which ``check`` found them (``identity_check``, ``daily_check``). Those banned."""
    if not player_ids:
        return []
    done = session.execute(
        update(Player)
        .where(
            Player.id.in_(sorted(set(player_ids))),
            Player.banned_at.is_(None),
            Player.closed_at.is_(None),
        )
        .values(suspended_at=now, suspended_until=None, banned_at=now)
        .returning(Player.id)
    ).all()
    banned = sorted(int(p) for (p,) in done)
    if banned:
        audit.append_many(
            session,
            records=[
                ("player_banned", actor, {"player_id": p, **seen.fields(), "check": check})
                for p in banned
            ],
            now=now,
        )
    return banned


def refuse_verification(
    session: Session, *, player_id: int, actor: str, now: datetime, seen: traces.Seen
) -> BannedError:
    """Ban ``player_id``, whose identity document names a person on the list: the refusal of
    the verification, to be committed with the suspension (service/identity.py)."""
    ban(
        session,
        player_ids=[player_id],
        actor=actor,
        check="identity_check",
        now=now,
        seen=seen,
    )
    return BannedError(
        "the person on this document is on the banned-gamblers list (interdits de jeux): "
        "the identity is not verified and the account is suspended"
    )


def check_players(
    *, session: Session, actor: str, now: datetime, every: timedelta | None = None
) -> list[int] | None:
    """Check every verified, open, not yet banned player against the list and ban those on
    it (:func:`ban`); the players banned. With ``every``, only if the last check is at least
    that old (else None): the list's row is taken by a conditional statement, so that of
    several servers looking at once one checks."""
    due = update(BannedList).where(BannedList.id == 1)
    if every is not None:
        due = due.where(BannedList.checked_at.is_(None) | (BannedList.checked_at <= now - every))
    if session.execute(due.values(checked_at=now).returning(BannedList.id)).first() is None:
        return None
    # The birth dates narrow the candidates in the database; the names are compared here,
    # where they are normalised as the list's were.
    candidates = session.execute(
        select(
            IdentityCheck.player_id,
            IdentityCheck.last_name,
            IdentityCheck.first_names,
            BannedGambler.last_name,
            BannedGambler.first_names,
        )
        .join(BannedGambler, BannedGambler.birth_date == IdentityCheck.birth_date)
        .join(Player, Player.id == IdentityCheck.player_id)
        .where(Player.banned_at.is_(None), Player.closed_at.is_(None))
    )
    matched = [
        int(player_id)
        for player_id, last, first, banned_last, banned_first in candidates
        if _same((name_key(last), name_key(first)), banned_last, banned_first)
    ]
    return ban(session, player_ids=matched, actor=actor, check="daily_check", now=now)


def check_if_due(*, session: Session, now: datetime) -> int:
    """The server's daily check (web/app.py's chores): how many players it banned (0 when the
    last check is less than a day old)."""
    banned = check_players(session=session, actor=audit.SERVER_ACTOR, now=now, every=DAY)
    return len(banned or ())
