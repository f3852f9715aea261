"""A player's identity (decree 2010-518, docs/rules.md §7): an account opens *provisional*; an
admin checks the player's identity document and marks it *verified*, with what was seen (the
document's kind and last digits, the name and birth date on it) and the IBAN, in the player's
name, that withdrawals will go to. A provisional account not verified within a number of days
of its opening is suspended for play by the server (the same suspension an operator takes:
service/measures.py), and that suspension is lifted when the identity is verified.

The check is one conditional statement on the player's row, so two admins checking one account
at once verify it once; the other is told it already is."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import Connection, case, insert, select, update
from sqlalchemy.orm import Session

from pharaon.service import audit, banned, measures, traces
from pharaon.service.errors import ConflictError, InvalidError, NotFoundError, ServiceError
from pharaon.store.tables import DOCUMENT_KINDS, IdentityCheck, Operator, Player

PROVISIONAL = "provisional"
VERIFIED = "verified"
STATES = (PROVISIONAL, VERIFIED)
LAST_NAME_MAX = 100
FIRST_NAMES_MAX = 200
DOCUMENT_REF = (2, 40)
_DOCUMENT_REF = re.compile(r"^[A-Z0-9][A-Z0-9 -]*$")
_LISTED = 100

# IBAN lengths by country (ISO 13616, the SWIFT IBAN registry). France's overseas departments
# and territories use FR.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
    "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip
_IBAN = re.compile(r"^[A-Z]{2}[0-9]{2}[A-Z0-9]+$")


def normalise_iban(text: str) -> str:
    """``text`` as an IBAN (spaces removed, upper case), checked by its country's length and
    its ISO 13616 check digits (mod 97); else :class:`InvalidError` naming the field."""
    iban = "".join(text.split()).upper()
    if not _IBAN.match(iban):
        raise InvalidError(
            "iban must be 2 letters of a country, 2 check digits, then letters and digits"
        )
    length = IBAN_LENGTHS.get(iban[:2])
    if length is None:
        raise InvalidError(f"iban: no IBAN is issued in country {iban[:2]}")
    if len(iban) != length:
        raise InvalidError(f"iban: an IBAN of {iban[:2]} has {length} characters, got {len(iban)}")
    if not iban_checksum_ok(iban):
        raise InvalidError("iban: its check digits do not match (mistyped?)")
    return iban


def iban_checksum_ok(iban: str) -> bool:
    """Whether the normalised ``iban`` passes ISO 7064 mod 97-10: its first four characters
    moved to the end, each letter read as 10..35, the number is 1 modulo 97."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def masked_iban(iban: str) -> str:
    """The IBAN as a player's page shows it: the country and its last four characters."""
    return f"{iban[:4]} •••• {iban[-4:]}"


@dataclass(frozen=True, slots=True)
class Document:
    """What an admin read on the player's identity document, and the IBAN given."""

    kind: str  # one of DOCUMENT_KINDS
    ref: str  # its number's last digits, or its reference
    last_name: str
    first_names: str
    birth_date: date
    iban: str


def check_document(document: Document) -> Document:
    """``document`` with its text trimmed and its IBAN normalised; :class:`InvalidError`
    naming the first field that is wrong."""
    if document.kind not in DOCUMENT_KINDS:
        raise InvalidError(
            f"document_kind must be one of {', '.join(DOCUMENT_KINDS)}, got {document.kind!r}"
        )
    ref = " ".join(document.ref.split()).upper()
    low, high = DOCUMENT_REF
    if not low <= len(ref) <= high or not _DOCUMENT_REF.match(ref):
        raise InvalidError(
            f"document_ref must be {low} to {high} letters, digits, spaces or dashes"
        )
    last = _name("last_name", document.last_name, LAST_NAME_MAX)
    first = _name("first_names", document.first_names, FIRST_NAMES_MAX)
    return Document(
        document.kind, ref, last, first, document.birth_date, normalise_iban(document.iban)
    )


def _name(field: str, text: str, most: int) -> str:
    value = " ".join(text.split())
    if not 1 <= len(value) <= most or not value.isprintable():
        raise InvalidError(f"{field} must be 1 to {most} printable characters")
    return value


@dataclass(frozen=True, slots=True)
class Identity:
    """Where an account stands: ``deadline`` is when a provisional account stops being
    playable, ``days_left`` the whole days until then (0 once past)."""

    state: str  # provisional, verified
    verified_at: datetime | None
    deadline: datetime | None
    days_left: int | None


def identity_of(
    *, created_at: datetime, verified_at: datetime | None, now: datetime, days: float
) -> Identity:
    """The identity state of an account opened at ``created_at``, given ``days`` to verify."""
    if verified_at is not None:
        return Identity(VERIFIED, verified_at, None, None)
    deadline = created_at + timedelta(days=days)
    left = max(0, math.ceil((deadline - now) / timedelta(days=1)))
    return Identity(PROVISIONAL, None, deadline, left)


def verify(
    *,
    session: Session,
    player_id: int,
    operator_id: int,
    actor: str,
    document: Document,
    now: datetime,
    seen: traces.Seen = traces.UNSEEN,
) -> Document | ServiceError:
    """Mark ``player_id``'s identity verified by ``operator_id`` with what ``document`` says
    (checked first), and lift the server's suspension for an identity left unchecked if it is
    the one in force. :class:`NotFoundError`; :class:`InvalidError` when the birth date on the
    document is not the account's; :class:`ConflictError` when the account is closed or
    already verified. A person on the banned-gamblers list is not verified: the account is
    suspended, and the :class:`~pharaon.service.banned.BannedError` is *returned*, to be
    raised once that is committed."""
    checked = check_document(document)
    row = session.execute(select(Player.birth_date).where(Player.id == player_id)).first()
    if row is None:
        raise NotFoundError(f"no player {player_id}")
    if row.birth_date != checked.birth_date:
        raise InvalidError(
            "birth_date on the document differs from the one the account was opened with: "
            "the identity cannot be verified with it"
        )
    if banned.is_listed(
        session.connection(),
        last_name=checked.last_name,
        first_names=checked.first_names,
        birth_date=checked.birth_date,
    ):
        return banned.refuse_verification(
            session, player_id=player_id, actor=actor, now=now, seen=seen
        )
    # Still the server's suspension (an operator's since would have set suspended_at anew).
    held = Player.identity_suspended_at.is_not(None) & (
        Player.suspended_at == Player.identity_suspended_at
    )
    done = session.execute(
        update(Player)
        .where(Player.id == player_id, Player.verified_at.is_(None), Player.closed_at.is_(None))
        .values(
            verified_at=now,
            suspended_at=case((held, None), else_=Player.suspended_at),
            suspended_until=case((held, None), else_=Player.suspended_until),
            identity_suspended_at=None,
        )
        .returning(Player.id)
    ).first()
    if done is None:
        raise _why_not(session.connection(), player_id)
    session.execute(
        insert(IdentityCheck).values(
            player_id=player_id,
            operator_id=operator_id,
            document_kind=checked.kind,
            document_ref=checked.ref,
            last_name=checked.last_name,
            first_names=checked.first_names,
            birth_date=checked.birth_date,
            iban=checked.iban,
            checked_at=now,
        )
    )
    audit.append(
        session,
        kind="identity_verified",
        actor=actor,
        payload={
            "player_id": player_id,
            **seen.fields(),
            "document_kind": checked.kind,
            "document_ref": checked.ref,
            "last_name": checked.last_name,
            "first_names": checked.first_names,
            "birth_date": checked.birth_date.isoformat(),
            "iban": checked.iban,
        },
        now=now,
    )
    return checked


def _why_not(connection: Connection, player_id: int) -> ConflictError:
    closed = connection.execute(select(Player.closed_at).where(Player.id == player_id)).scalar()
    if closed is not None:
        return ConflictError(f"the account of player {player_id} is closed")
    return ConflictError(f"the identity of player {player_id} is already verified")


def suspend_overdue(*, session: Session, now: datetime, after: timedelta) -> int:
    """Suspend for play every open account still provisional ``after`` its opening and not
    suspended already (a suspension lifted by an operator comes back: the rule is the
    decree's); one audit record each, by the server. How many were suspended."""
    in_force = Player.suspended_at.is_not(None) & (
        Player.suspended_until.is_(None) | (Player.suspended_until > now)
    )
    rows = session.execute(
        update(Player)
        .where(
            Player.verified_at.is_(None),
            Player.closed_at.is_(None),
            Player.created_at <= now - after,
            ~in_force,
        )
        .values(suspended_at=now, suspended_until=None, identity_suspended_at=now)
        .returning(Player.id, Player.created_at)
    ).all()
    if rows:
        audit.append_many(
            session,
            records=[
                (
                    "identity_suspended",
                    audit.SERVER_ACTOR,
                    {"player_id": int(p), "opened_at": opened.isoformat()},
                )
                for p, opened in sorted(rows)
            ],
            now=now,
        )
    return len(rows)


@dataclass(frozen=True, slots=True)
class CheckSeen:
    """An identity check as the back office shows it."""

    document_kind: str
    document_ref: str
    last_name: str
    first_names: str
    birth_date: date
    iban: str
    checked_at: datetime
    operator: str  # the admin's e-mail

    @classmethod
    def of(cls, document: Document, checked_at: datetime, operator: str) -> CheckSeen:
        """The check of ``document`` (as :func:`check_document` left it) by ``operator``."""
        return cls(
            document.kind,
            document.ref,
            document.last_name,
            document.first_names,
            document.birth_date,
            document.iban,
            checked_at,
            operator,
        )


def check_of(*, connection: Connection, player_id: int) -> CheckSeen | None:
    """What the admin saw when verifying ``player_id``; None while provisional."""
    row = connection.execute(
        select(
            IdentityCheck.document_kind,
            IdentityCheck.document_ref,
            IdentityCheck.last_name,
            IdentityCheck.first_names,
            IdentityCheck.birth_date,
            IdentityCheck.iban,
            IdentityCheck.checked_at,
            Operator.email,
        )
        .join(Operator, Operator.id == IdentityCheck.operator_id)
        .where(IdentityCheck.player_id == player_id)
    ).first()
    return None if row is None else CheckSeen(*row)


@dataclass(frozen=True, slots=True)
class IdentityLine:
    """A player's identity state in the back office's list."""

    player_id: int
    email: str
    created_at: datetime
    identity: Identity
    suspended: bool
    closed_at: datetime | None


def listing(
    *, connection: Connection, state: str, now: datetime, days: float
) -> list[IdentityLine]:
    """The players whose identity is in ``state``: provisional ones oldest first (the nearest
    deadline first), verified ones last verified first; at most 100, closed accounts left
    out."""
    if state not in STATES:
        raise InvalidError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    query = select(
        Player.id,
        Player.email,
        Player.created_at,
        Player.verified_at,
        Player.suspended_at,
        Player.suspended_until,
        Player.closed_at,
    ).where(Player.closed_at.is_(None))
    if state == PROVISIONAL:
        query = query.where(Player.verified_at.is_(None)).order_by(Player.created_at, Player.id)
    else:
        query = query.where(Player.verified_at.is_not(None)).order_by(
            Player.verified_at.desc(), Player.id
        )
    out = []
    for row in connection.execute(query.limit(_LISTED)):
        out.append(
            IdentityLine(
                int(row.id),
                row.email,
                row.created_at,
                identity_of(
                    created_at=row.created_at, verified_at=row.verified_at, now=now, days=days
                ),
                measures.in_force(row.suspended_at, row.suspended_until, now),
                row.closed_at,
            )
        )
    return out
