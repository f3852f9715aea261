"""The database tables (SQLAlchemy 2 declarative). Money is integer cents, times aware UTC.

Ledger: every movement is one ``LedgerTransaction`` whose ``LedgerEntry`` rows sum to zero; an
``Account`` keeps its balance, which must equal the sum of its entries. The four operator
accounts have fixed ids (``CASH``: where deposits come from, ``SALES``: stakes, ``PRIZES``: lots,
``PENDING``: the lots of « Jouer » plays not yet fully uncovered, held until the fourth grid;
``WITHDRAWALS``: withdrawals asked and not yet paid nor given back; ``PAID_OUT``: withdrawals
paid to the players' bank accounts).
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from pharaon.game.modes import Mode
from pharaon.store.types import UTCDateTime

CASH_ACCOUNT = 1
SALES_ACCOUNT = 2
PRIZES_ACCOUNT = 3
# Id 0: the operator's accounts are set apart from the players' (1 to 3 came first).
PENDING_ACCOUNT = 0
# Negative ids: added after the players' accounts had taken the positive ones (migration 0005).
WITHDRAWALS_ACCOUNT = -1
PAID_OUT_ACCOUNT = -2
OPERATOR_ACCOUNTS = {
    PAID_OUT_ACCOUNT: "paid_out",
    WITHDRAWALS_ACCOUNT: "withdrawals",
    PENDING_ACCOUNT: "pending",
    CASH_ACCOUNT: "cash",
    SALES_ACCOUNT: "sales",
    PRIZES_ACCOUNT: "prizes",
}

BLOCK_STATES = ("loaded", "open", "sold_out", "deactivated")
GENESIS_HASH = "0" * 64

_NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=_NAMING)


PAUSE_KINDS = ("cool_off", "self_exclusion")  # a player's pause: service/limits.py


class Player(Base):
    __tablename__ = "players"
    __table_args__ = (CheckConstraint(f"pause_kind IN {PAUSE_KINDS}", name="known_pause"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    birth_date: Mapped[date] = mapped_column(Date)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    self_excluded_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # What the pause until ``self_excluded_until`` is: one of PAUSE_KINDS, the one that ends
    # last (None: never paused).
    pause_kind: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # A closed account keeps its row and its balance on the ledger; it can no longer log in.
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Minutes between two reality checks on the player's page; None: off.
    reality_check_minutes: Mapped[int | None] = mapped_column(SmallInteger, nullable=True)
    # Play and deposits stopped by an operator (service/measures.py) from ``suspended_at``
    # until ``suspended_until`` (None: until an operator lifts it).
    suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    suspended_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # When an operator checked the player's identity (None: the account is provisional), and
    # the suspension the server put on an account left provisional too long (service/identity.py).
    verified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    identity_suspended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # When the player was found on the banned-gamblers list and suspended for it, once
    # (service/banned.py); None: never found on it.
    banned_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class LoginFailure(Base):
    """Failed log-ins counted under one key (an email, a client address, an operator's) and the
    lock-out they lead to: one table for every kind of log-in (service/logins.py)."""

    __tablename__ = "login_failures"

    key: Mapped[str] = mapped_column(String(254), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class SessionRow(Base):
    """A log-in session of a player or of an operator (exactly one of the two); the token
    itself is never stored, only its SHA-256."""

    __tablename__ = "sessions"
    __table_args__ = (
        CheckConstraint("(player_id IS NULL) <> (operator_id IS NULL)", name="one_holder"),
    )

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    player_id: Mapped[int | None] = mapped_column(
        ForeignKey("players.id"), index=True, nullable=True
    )
    operator_id: Mapped[int | None] = mapped_column(
        ForeignKey("operators.id"), index=True, nullable=True
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint("kind <> 'player' OR balance_cents >= 0", name="funded"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # player, cash, sales, prizes
    player_id: Mapped[int | None] = mapped_column(
        ForeignKey("players.id"), unique=True, nullable=True
    )
    balance_cents: Mapped[int] = mapped_column(BigInteger)


class LedgerTransaction(Base):
    __tablename__ = "ledger_transactions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # deposit, purchase
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LedgerEntry(Base):
    __tablename__ = "ledger_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    transaction_id: Mapped[int] = mapped_column(ForeignKey("ledger_transactions.id"), index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"), index=True)
    amount_cents: Mapped[int] = mapped_column(BigInteger)


class Deposit(Base):
    __tablename__ = "deposits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    transaction_id: Mapped[int] = mapped_column(ForeignKey("ledger_transactions.id"))

    __table_args__ = (
        CheckConstraint("amount_cents > 0", name="positive"),
        Index("ix_deposits_player_time", "player_id", "created_at"),
    )


class DepositLimit(Base):
    """A player's limit of one kind (daily, weekly, monthly: deposits; stake_daily ..
    stake_monthly: stakes; loss: the net loss over 7 days); a raise waits in ``pending_*``
    (service/limits.py)."""

    __tablename__ = "deposit_limits"

    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"), primary_key=True)
    period: Mapped[str] = mapped_column(String(16), primary_key=True)  # see service/limits.py
    amount_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # None: no limit
    pending_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    pending_effective_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class StakeHour(Base):
    """A player's stakes in one hour (``hour``: its start, UTC), added to by each sale: what
    the stake limits count (service/limits.py)."""

    __tablename__ = "stake_hours"

    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"), primary_key=True)
    hour: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    stakes_cents: Mapped[int] = mapped_column(BigInteger)


class Block(Base):
    __tablename__ = "blocks"
    __table_args__ = (
        UniqueConstraint("game", "emission", "price_cents", "block_number", name="uq_blocks_id"),
        CheckConstraint(
            "state IN ('loaded', 'open', 'sold_out', 'deactivated')", name="known_state"
        ),
        # At most one block on sale per price.
        Index(
            "uq_blocks_open_price",
            "price_cents",
            unique=True,
            sqlite_where=text("state = 'open'"),
            postgresql_where=text("state = 'open'"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    game: Mapped[str] = mapped_column(String(40))
    emission: Mapped[str] = mapped_column(String(40))
    price_cents: Mapped[int] = mapped_column(Integer)
    block_number: Mapped[int] = mapped_column(Integer)
    block_size: Mapped[int] = mapped_column(Integer)
    is_test: Mapped[bool]
    units_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    merkle_root: Mapped[str] = mapped_column(String(128))
    manifest_json: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(12))
    loaded_at: Mapped[datetime] = mapped_column(UTCDateTime)
    deactivated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    deactivation_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    loaded_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    approved_by: Mapped[str | None] = mapped_column(String(200), nullable=True)


class RevealedKeys(Base):
    """A closed block's vendor and operator keys, published (service/revealed_keys.py)."""

    __tablename__ = "revealed_keys"

    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"), primary_key=True)
    vendor_key: Mapped[str] = mapped_column(String(128))
    operator_key: Mapped[str] = mapped_column(String(128))
    revealed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revealed_by: Mapped[str] = mapped_column(String(200))


class SaleRun(Base):
    """A run of a block's sale order, ``first_serial`` to ``last_serial``, sold in order: the
    units before ``next_serial`` are sold (service/runs.py)."""

    __tablename__ = "sale_runs"
    __table_args__ = (
        CheckConstraint(
            "next_serial BETWEEN first_serial AND last_serial + 1", name="serial_in_run"
        ),
    )

    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"), primary_key=True)
    run: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    first_serial: Mapped[int] = mapped_column(Integer)
    last_serial: Mapped[int] = mapped_column(Integer)
    next_serial: Mapped[int] = mapped_column(Integer)


class BlockPrize(Base):
    """How many units of a block hold each winning lot, counted when it was loaded."""

    __tablename__ = "block_prizes"

    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"), primary_key=True)
    lot_cents: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    units: Mapped[int] = mapped_column(Integer)


class UnitRow(Base):
    """One game unit of a block: its 64 symbol indices (bytes 0..5) and its lot."""

    __tablename__ = "units"

    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"), primary_key=True)
    serial: Mapped[int] = mapped_column(Integer, primary_key=True)
    cells: Mapped[bytes] = mapped_column(LargeBinary(64))
    lot_cents: Mapped[int] = mapped_column(BigInteger)


class MerkleChunk(Base):
    """A slice of one level of a block's Merkle tree (level 0: the leaves), so that a proof
    reads a few hashes instead of rebuilding the tree: ``hashes`` holds the 32-byte nodes
    ``chunk * CHUNK_NODES`` onwards of that level, concatenated."""

    __tablename__ = "merkle_chunks"

    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"), primary_key=True)
    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    chunk: Mapped[int] = mapped_column(Integer, primary_key=True)
    hashes: Mapped[bytes] = mapped_column(LargeBinary)


# A jouer play not fully uncovered: its lot is not told yet. Written as SQL with its constants,
# so that both databases use the partial index below for a query that says it.
_UNFINISHED = f"mode = '{Mode.JOUER}' AND revealed <> 15"
UNFINISHED_JOUER = text(f"plays.mode = '{Mode.JOUER}' AND plays.revealed <> 15")


class PlayRow(Base):
    __tablename__ = "plays"
    __table_args__ = (
        UniqueConstraint("block_id", "serial", name="uq_plays_unit"),
        Index("ix_plays_player_id", "player_id", "id"),
        # The net loss over the last 7 days, read by each purchase of a player with a loss limit.
        Index("ix_plays_player_time", "player_id", "created_at"),
        Index("ix_plays_block_prize", "block_id", "prize_cents"),
        # The last day's plays, for the operator's watch (service/stock.py) and the reports.
        Index("ix_plays_time", "created_at"),
        Index(
            "ix_plays_unfinished",
            "block_id",
            "prize_cents",
            sqlite_where=text(_UNFINISHED),
            postgresql_where=text(_UNFINISHED),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    block_id: Mapped[int] = mapped_column(ForeignKey("blocks.id"))
    serial: Mapped[int] = mapped_column(Integer)
    stake_cents: Mapped[int] = mapped_column(Integer)
    mode: Mapped[str] = mapped_column(String(8))  # jouer, auto
    prize_cents: Mapped[int] = mapped_column(BigInteger)
    revealed: Mapped[int] = mapped_column(SmallInteger)  # bit g-1 set: grid g uncovered
    balance_before_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    transaction_id: Mapped[int] = mapped_column(ForeignKey("ledger_transactions.id"))
    # A jouer play the player left unfinished, finished by the server (service/plays.py).
    finished_by_server_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class IdempotencyKey(Base):
    """A request a player may retry: the same key and body return the same result."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("player_id", "key", name="uq_idempotency_player_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    key: Mapped[str] = mapped_column(String(200))
    request_sha256: Mapped[str] = mapped_column(String(64))
    result_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AuditRecord(Base):
    """Append-only; ``sha256`` covers the previous record's hash and this record's content."""

    __tablename__ = "audit_log"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    kind: Mapped[str] = mapped_column(String(32))
    actor: Mapped[str] = mapped_column(String(80))
    payload: Mapped[str] = mapped_column(Text)  # canonical JSON
    prev_sha256: Mapped[str] = mapped_column(String(64))
    sha256: Mapped[str] = mapped_column(String(64))


class AuditHead(Base):
    """One row: the chain's last record, locked by each writer to append in order."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))


class AuditCheckpoint(Base):
    """A published head of the audit chain (never a player's data): the chain must still pass
    through it, so rewriting the whole chain is detected."""

    __tablename__ = "audit_checkpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # block_loaded, block_approved, keys_revealed (service/revealed_keys.py), daily
    reason: Mapped[str] = mapped_column(String(16))
    # The root (hex) of the Merkle tree over records 1..seq (service/logtree.py), what the
    # signed checkpoint says; None until the stored tree has reached ``seq``.
    root: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AuditTreeHead(Base):
    """One row: how many audit records the stored Merkle tree covers; locked by whoever
    extends the tree (service/logtree.py), never by a sale."""

    __tablename__ = "audit_tree_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)


class AuditTreeChunk(Base):
    """A slice of one level of the audit log's Merkle tree (level 0: the leaves): the
    complete nodes ``chunk * 256`` onwards of that level, 32 bytes each, concatenated."""

    __tablename__ = "audit_tree"

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    chunk: Mapped[int] = mapped_column(Integer, primary_key=True)
    hashes: Mapped[bytes] = mapped_column(LargeBinary)


class AuditCosignature(Base):
    """A witness's cosignature (c2sp.org/tlog-cosignature) of a signed checkpoint, checked
    against the witness's key when it was received (service/transparency.py)."""

    __tablename__ = "audit_cosignatures"
    __table_args__ = (
        UniqueConstraint("tree_size", "witness", "key_id", name="uq_audit_cosignatures_witness"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tree_size: Mapped[int] = mapped_column(Integer)
    root: Mapped[str] = mapped_column(String(64))  # hex
    witness: Mapped[str] = mapped_column(String(200))  # the witness key's name
    key_id: Mapped[str] = mapped_column(String(8))  # hex
    signature: Mapped[str] = mapped_column(String(200))  # base64, the line's last field
    cosigned_at: Mapped[datetime] = mapped_column(UTCDateTime)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)


OPERATOR_ROLES = ("admin", "analyst", "auditor")
# What an operator does to a player's account (service/measures.py).
MEASURES = ("note", "suspend", "exclude", "lift", "close")


class Operator(Base):
    """A person running the game (not a player): argon2 password and a TOTP second factor."""

    __tablename__ = "operators"
    __table_args__ = (CheckConstraint("role IN ('admin', 'analyst', 'auditor')", name="role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    # Sealed with AES-GCM (service/sealing.py): verifying a code needs the secret itself
    # (RFC 6238), so it cannot be hashed.
    totp_secret: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The last TOTP time step accepted, so a code cannot be replayed.
    last_totp_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class PlayerNote(Base):
    """An operator's measure on a player's account, or a note to the player, with its reason;
    the player sees each one on their page (the operator's name stays in the audit log)."""

    __tablename__ = "player_notes"
    __table_args__ = (
        CheckConstraint(
            "measure IN ('note', 'suspend', 'exclude', 'lift', 'close')", name="known_measure"
        ),
        Index("ix_player_notes_player", "player_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id"))
    measure: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str] = mapped_column(Text)
    until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


# The identity documents an operator may check (service/identity.py).
DOCUMENT_KINDS = ("id_card", "passport", "residence_permit")


class IdentityCheck(Base):
    """What an operator saw when checking a player's identity (once per account): the
    document, the name and birth date on it, and the IBAN withdrawals go to."""

    __tablename__ = "identity_checks"
    __table_args__ = (
        CheckConstraint(
            "document_kind IN ('id_card', 'passport', 'residence_permit')", name="known_document"
        ),
    )

    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"), primary_key=True)
    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id"))
    document_kind: Mapped[str] = mapped_column(String(16))
    document_ref: Mapped[str] = mapped_column(String(40))  # its last digits or reference
    last_name: Mapped[str] = mapped_column(String(100))
    first_names: Mapped[str] = mapped_column(String(200))
    birth_date: Mapped[date] = mapped_column(Date)
    iban: Mapped[str] = mapped_column(String(34))
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime)


# requested: the money left the player's balance for the withdrawals account; paid: it went on
# to the paid-out account (at once under the approval threshold, else on an admin's approval);
# rejected: it came back to the player's balance (service/withdrawals.py).
WITHDRAWAL_STATES = ("requested", "paid", "rejected")


class Withdrawal(Base):
    __tablename__ = "withdrawals"
    __table_args__ = (
        CheckConstraint("amount_cents > 0", name="positive"),
        CheckConstraint("state IN ('requested', 'paid', 'rejected')", name="known_state"),
        Index("ix_withdrawals_player", "player_id", "id"),
        # The withdrawals waiting for an admin.
        Index(
            "ix_withdrawals_requested",
            "id",
            sqlite_where=text("state = 'requested'"),
            postgresql_where=text("state = 'requested'"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    iban: Mapped[str] = mapped_column(String(34))
    state: Mapped[str] = mapped_column(String(10))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime)
    request_transaction_id: Mapped[int] = mapped_column(ForeignKey("ledger_transactions.id"))
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    decision_transaction_id: Mapped[int | None] = mapped_column(
        ForeignKey("ledger_transactions.id"), nullable=True
    )
    # The admin who approved or rejected it (None: paid at once, under the threshold).
    operator_id: Mapped[int | None] = mapped_column(ForeignKey("operators.id"), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)  # a rejection's, for the player


class BannedGambler(Base):
    """A person on the ministry's banned-gamblers list (« interdits de jeux »), kept as a match
    needs it: the keys of the names (service/banned.py ``name_key``) and the birth date."""

    __tablename__ = "banned_gamblers"
    __table_args__ = (Index("ix_banned_gamblers_birth_date", "birth_date"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_name: Mapped[str] = mapped_column(String(200))
    first_names: Mapped[str] = mapped_column(String(200))
    birth_date: Mapped[date] = mapped_column(Date)


class BannedList(Base):
    """The banned-gamblers list's one row (id 1): when it was last loaded, its entries and the
    file's SHA-256, and when the players were last checked against it (taken by the daily
    check, so that of several servers one does it)."""

    __tablename__ = "banned_list"
    __table_args__ = (CheckConstraint("id = 1", name="one_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    loaded_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    entries: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
