"""The audit log's Merkle tree (RFC 6962), kept in the database so that a proof reads a few
hashes instead of rebuilding a tree of millions of leaves per request.

Leaf ``i`` (0-based) is audit record ``seq = i + 1``; its bytes are the 32 bytes of the
record's chain hash (``audit_log.sha256``), which covers the record and all before it:
``leaf = SHA-256(0x00 ‖ sha256)``. Every *complete* node of every level is stored, 256 a row
(``audit_tree``: level 0 the leaves); the tree's right edge, incomplete, is folded from them
when asked (:func:`pharaon.pool.tlog.range_hash`). A proof or a root at any size up to the
stored one reads O(log² n) nodes at most, in one statement.

The tree is extended when a checkpoint is taken (service/checkpoints.py), from the records
appended since, never by a sale: whoever extends it first locks ``audit_tree_head`` (never
locked by a sale), so the sales' lock on the audit head is not held for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, func, insert, literal, select, union_all, update
from sqlalchemy.orm import Session

from pharaon.pool import tlog
from pharaon.service.errors import ConflictError, NotFoundError
from pharaon.store.tables import AuditRecord, AuditTreeChunk, AuditTreeHead

CHUNK_NODES = 256  # 8 KB of hashes per row
_HASH = tlog.HASH_BYTES
_BATCH = 1 << 16  # records hashed per step of an extension (a multiple of CHUNK_NODES)
_UNION = 200  # node reads per statement
_HEAD = 1
_SIZE = select(AuditTreeHead.size).where(AuditTreeHead.id == _HEAD)


def stored_size(*, connection: Connection) -> int:
    """How many records the stored tree covers."""
    return int(connection.execute(_SIZE).scalar_one())


def lock(session: Session) -> int:
    """Lock the tree for extending it, in the caller's transaction; its size."""
    return int(session.execute(_SIZE.with_for_update()).scalar_one())


def try_lock(session: Session) -> int | None:
    """As :func:`lock`, but None at once if another transaction holds the lock (PostgreSQL;
    on SQLite the writer holds the whole database already)."""
    found = session.execute(_SIZE.with_for_update(skip_locked=True)).scalar_one_or_none()
    return None if found is None else int(found)


def extend(session: Session, *, size: int, to: int) -> int:
    """Add records ``size + 1 .. to`` to the tree of ``size`` leaves (locked by the caller,
    :func:`lock`); the new size. Reads and hashes the records by batches of 65,536."""
    while size < to:
        step = min(to, size + _BATCH)
        _append(session, size, _leaves(session.connection(), size, step))
        size = step
    session.execute(update(AuditTreeHead).where(AuditTreeHead.id == _HEAD).values(size=size))
    return size


def _leaves(connection: Connection, size: int, to: int) -> list[bytes]:
    rows = connection.execute(
        select(AuditRecord.seq, AuditRecord.sha256)
        .where(AuditRecord.seq > size, AuditRecord.seq <= to)
        .order_by(AuditRecord.seq)
    ).all()
    leaves = []
    for expected, (seq, digest) in enumerate(rows, start=size + 1):
        if seq != expected:
            break
        leaves.append(tlog.leaf_hash(bytes.fromhex(digest)))
    if len(leaves) != to - size:
        raise ConflictError(
            f"audit record {size + len(leaves) + 1} is missing: the log's tree cannot grow"
        )
    return leaves


def _append(session: Session, size: int, leaves: list[bytes]) -> None:
    """Store the nodes that ``leaves`` (leaf hashes ``size`` onwards) complete, level by
    level: at level L the complete nodes go from ``size >> L`` to ``(size + n) >> L``."""
    level, start, new = 0, size, leaves
    while new:
        _write(session, level, start, new)
        first_child = 2 * (start >> 1)  # the left child of the level above's first new node
        children = new
        if first_child < start:  # an old left child, stored: its right sibling is new
            children = [_nodes(session.connection(), [(level, first_child)])[level, first_child]]
            children += new
        new = [tlog.node_hash(children[i], children[i + 1]) for i in range(0, len(children) - 1, 2)]
        level, start = level + 1, start >> 1


def _write(session: Session, level: int, start: int, hashes: list[bytes]) -> None:
    chunk, offset = divmod(start, CHUNK_NODES)
    blob = b"".join(hashes)
    done = 0
    if offset:
        old = session.execute(
            select(AuditTreeChunk.hashes).where(
                AuditTreeChunk.level == level, AuditTreeChunk.chunk == chunk
            )
        ).scalar_one_or_none()
        if old is None or len(old) != offset * _HASH:
            raise ConflictError(f"the audit log's tree is damaged at level {level}, chunk {chunk}")
        done = min(len(hashes), CHUNK_NODES - offset)
        session.execute(
            update(AuditTreeChunk)
            .where(AuditTreeChunk.level == level, AuditTreeChunk.chunk == chunk)
            .values(hashes=bytes(old) + blob[: done * _HASH])
        )
        chunk += 1
    step = CHUNK_NODES * _HASH
    rows = [
        {"level": level, "chunk": chunk + i, "hashes": blob[at : at + step]}
        for i, at in enumerate(range(done * _HASH, len(blob), step))
    ]
    if rows:
        session.execute(insert(AuditTreeChunk), rows)


def _nodes(connection: Connection, wanted: Iterable[tlog.Node]) -> dict[tlog.Node, bytes]:
    """The stored hashes of the complete nodes ``wanted`` (level, index), by ``substr`` of
    their rows, 200 a statement."""
    wanted = sorted(set(wanted))
    found: dict[tlog.Node, bytes] = {}
    for at in range(0, len(wanted), _UNION):
        parts = [
            select(
                literal(level).label("level"),
                literal(index).label("node"),
                func.substr(AuditTreeChunk.hashes, (index % CHUNK_NODES) * _HASH + 1, _HASH).label(
                    "hash"
                ),
            ).where(AuditTreeChunk.level == level, AuditTreeChunk.chunk == index // CHUNK_NODES)
            for level, index in wanted[at : at + _UNION]
        ]
        for level, index, digest in connection.execute(union_all(*parts)):
            found[int(level), int(index)] = bytes(digest)
    missing = [n for n in wanted if len(found.get(n, b"")) != _HASH]
    if missing:
        raise ConflictError(f"the audit log's tree lacks node {missing[0]}: it is damaged")
    return found


def _hashes(connection: Connection, ranges: list[tlog.Range]) -> list[bytes]:
    found = _nodes(connection, tlog.nodes_for(ranges))
    return [tlog.range_hash(start, end, found) for start, end in ranges]


def _check_size(connection: Connection, tree_size: int) -> None:
    stored = stored_size(connection=connection)
    if not 0 <= tree_size <= stored:
        raise NotFoundError(
            f"tree_size must be 0..{stored} (the records the log's tree covers), got {tree_size}"
        )


def root(*, connection: Connection, tree_size: int) -> bytes:
    """The root of the tree over the first ``tree_size`` records (at most the stored size)."""
    _check_size(connection, tree_size)
    return _hashes(connection, [(0, tree_size)])[0]


def inclusion(*, connection: Connection, seq: int, tree_size: int) -> tuple[str, list[bytes]]:
    """Record ``seq``'s chain hash (hex) and the proof that it is leaf ``seq - 1`` of the tree
    of ``tree_size`` records, bottom up."""
    _check_size(connection, tree_size)
    if not 1 <= seq <= tree_size:
        raise NotFoundError(f"seq must be 1..{tree_size} for a tree of {tree_size}, got {seq}")
    digest = connection.execute(
        select(AuditRecord.sha256).where(AuditRecord.seq == seq)
    ).scalar_one_or_none()
    if digest is None:
        raise NotFoundError(f"no audit record {seq}")
    return str(digest), _hashes(connection, tlog.inclusion_ranges(seq - 1, tree_size))


def consistency(*, connection: Connection, first: int, second: int) -> list[bytes]:
    """The proof that the tree of ``first`` records is a prefix of that of ``second``."""
    _check_size(connection, second)
    if not 0 <= first <= second:
        raise NotFoundError(f"first must be 0..{second} (second), got {first}")
    return _hashes(connection, tlog.consistency_ranges(first, second))
