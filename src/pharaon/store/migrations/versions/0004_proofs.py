"""Proofs for the player: nothing told early, Merkle levels kept, audit checkpoints.

- A « Jouer » play's lot is held in the operator's ``pending`` account (id 0) until its fourth
  grid is uncovered, so that no route (``GET /me``, a purchase's funds check) tells it early:
  ``pharaon_sell`` is replaced by the same function crediting jouer lots to account 0 (the
  Python path, ``service/sales.py``, does the same; ``tests/service/test_sell_function.py``).
- ``merkle_chunks``: every level of each block's Merkle tree, in slices, so a proof reads a
  few hashes (``service/proofs.py``).
- ``audit_checkpoints``: published heads of the audit chain.
- ``ix_plays_unfinished``: the few jouer plays not yet finished, by block and lot, so that the
  remaining prizes count their lots as still to be won (a count that moved would tell them).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

import importlib

import sqlalchemy as sa
from alembic import op

from pharaon.store.types import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SIGNATURE = (
    "pharaon_sell(integer[], integer[], text[], smallint[], text[], text[], timestamptz, "
    "integer, integer)"
)

# As migration 0002's, except that a jouer play's lot goes to account 0 (pending), not to the
# buyer's account: the changed lines are marked by "p_modes[...] = 'auto'" and v_pending_lots.
SELL = r"""
CREATE OR REPLACE FUNCTION pharaon_sell(
    p_players integer[],
    p_stakes integer[],
    p_modes text[],
    p_revealed smallint[],
    p_keys text[],
    p_digests text[],
    p_now timestamptz,
    p_sales_account integer,
    p_prizes_account integer
) RETURNS TABLE (
    outcome text,
    play_id integer,
    key_id integer,
    account_id integer,
    block_id integer,
    serial integer,
    lot_cents bigint,
    cells bytea,
    balance_before bigint,
    balance_after bigint,
    excluded_until timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $fn$
#variable_conflict use_column
DECLARE
    n integer := cardinality(p_players);
    o_outcome text[] := array_fill(NULL::text, ARRAY[n]);
    o_play integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_key integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_account integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_after_stake bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    o_block integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_serial integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_lot bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    o_cells bytea[] := array_fill(NULL::bytea, ARRAY[n]);
    o_txn integer[] := array_fill(NULL::integer, ARRAY[n]);
    o_until timestamptz[] := array_fill(NULL::timestamptz, ARRAY[n]);
    v_buyers integer[];
    v_needed integer[];
    v_released integer[] := '{}';
    v_sold integer[];
    v_ids integer[];
    v_play_ids integer[];
    a_seq integer[] := '{}';
    a_actor text[] := '{}';
    a_payload text[] := '{}';
    a_prev text[] := '{}';
    a_hash text[] := '{}';
    v_price integer;
    v_count integer;
    v_tried boolean;
    v_next integer;
    v_sold_stakes bigint := 0;
    v_sold_lots bigint := 0;
    v_pending_lots bigint := 0;
    v_seq integer;
    v_prev text;
    v_payload text;
    v_created text;
    i integer;
    r record;
BEGIN
    -- 1. Claim the keys, in (player, key) order as every writer does. A key used before is a
    --    replay of its play, or a conflict.
    FOR r IN
        INSERT INTO idempotency_keys AS k (player_id, key, request_sha256, created_at)
        SELECT u.player, u.key, u.digest, p_now
        FROM unnest(p_players, p_keys, p_digests) AS u(player, key, digest)
        ORDER BY u.player, u.key
        ON CONFLICT (player_id, key) DO NOTHING
        RETURNING k.player_id, k.id
    LOOP
        o_key[array_position(p_players, r.player_id)] := r.id;
    END LOOP;
    FOR i IN 1..n LOOP
        CONTINUE WHEN o_key[i] IS NOT NULL;
        SELECT k.request_sha256, k.result_id INTO r
        FROM idempotency_keys AS k
        WHERE k.player_id = p_players[i] AND k.key = p_keys[i];
        IF r.request_sha256 = p_digests[i] AND r.result_id IS NOT NULL THEN
            o_outcome[i] := 'replay';
            o_play[i] := r.result_id;
        ELSE
            o_outcome[i] := 'conflict';
        END IF;
    END LOOP;

    -- 2. Lock the buyers' accounts in id order, then debit each stake the balance holds,
    --    unless the player is self-excluded.
    SELECT array_agg(p_players[i]) INTO v_buyers
    FROM generate_subscripts(p_players, 1) AS i
    WHERE o_outcome[i] IS NULL;
    IF v_buyers IS NOT NULL THEN
        PERFORM 1 FROM accounts AS a WHERE a.player_id = ANY (v_buyers) ORDER BY a.id FOR UPDATE;
        FOR r IN
            UPDATE accounts AS a
            SET balance_cents = a.balance_cents - w.stake
            FROM unnest(p_players, p_stakes, o_outcome) AS w(player, stake, outcome)
            WHERE w.outcome IS NULL
              AND a.player_id = w.player
              AND a.balance_cents >= w.stake
              AND NOT EXISTS (
                  SELECT 1 FROM players AS p
                  WHERE p.id = w.player AND p.self_excluded_until > p_now
              )
            RETURNING a.player_id, a.id, a.balance_cents
        LOOP
            i := array_position(p_players, r.player_id);
            o_account[i] := r.id;
            o_after_stake[i] := r.balance_cents;
        END LOOP;
        FOR i IN 1..n LOOP
            CONTINUE WHEN o_outcome[i] IS NOT NULL OR o_account[i] IS NOT NULL;
            o_until[i] := (
                SELECT p.self_excluded_until FROM players AS p WHERE p.id = p_players[i]
            );
            o_outcome[i] := CASE WHEN o_until[i] > p_now THEN 'excluded' ELSE 'short' END;
            v_released := v_released || o_key[i];
        END LOOP;
    END IF;

    -- 3. Take the next unsold units of the open block at each price, prices in order; a block
    --    sold out on the way opens the next one loaded.
    FOR v_price IN
        SELECT DISTINCT p_stakes[i] FROM generate_subscripts(p_players, 1) AS i
        WHERE o_outcome[i] IS NULL ORDER BY 1
    LOOP
        SELECT array_agg(i ORDER BY i) INTO v_needed
        FROM generate_subscripts(p_players, 1) AS i
        WHERE o_outcome[i] IS NULL AND p_stakes[i] = v_price;
        v_tried := false;
        WHILE cardinality(v_needed) > 0 LOOP
            SELECT b.id, b.next_serial, b.block_size INTO r
            FROM blocks AS b
            WHERE b.price_cents = v_price AND b.state = 'open'
            FOR UPDATE;
            IF NOT FOUND THEN
                EXIT WHEN v_tried;
                -- If a concurrent buyer opens it first, this waits for its commit, so the
                -- next look finds it either way.
                IF NOT EXISTS (
                    SELECT 1 FROM blocks AS b WHERE b.price_cents = v_price AND b.state = 'open'
                ) THEN
                    SELECT min(b.id) INTO v_next
                    FROM blocks AS b WHERE b.price_cents = v_price AND b.state = 'loaded';
                    IF v_next IS NOT NULL THEN
                        UPDATE blocks AS b SET state = 'open'
                        WHERE b.id = v_next AND b.state = 'loaded';
                    END IF;
                END IF;
                v_tried := true;
                CONTINUE;
            END IF;
            v_tried := false;
            v_count := greatest(0, least(cardinality(v_needed), r.block_size + 1 - r.next_serial));
            UPDATE blocks AS b
            SET next_serial = r.next_serial + v_count,
                state = CASE WHEN r.next_serial + v_count > r.block_size
                             THEN 'sold_out' ELSE 'open' END
            WHERE b.id = r.id;
            FOR i IN 1..v_count LOOP
                o_block[v_needed[i]] := r.id;
                o_serial[v_needed[i]] := r.next_serial + i - 1;
            END LOOP;
            v_needed := v_needed[v_count + 1:];
        END LOOP;
        -- What is still needed found its price sold out: its stake goes back.
        FOREACH i IN ARRAY coalesce(v_needed, '{}') LOOP
            o_outcome[i] := 'sold_out';
            v_released := v_released || o_key[i];
            UPDATE accounts AS a SET balance_cents = a.balance_cents + p_stakes[i]
            WHERE a.id = o_account[i];
        END LOOP;
    END LOOP;
    DELETE FROM idempotency_keys AS k WHERE k.id = ANY (v_released);

    -- 4. The sales, in the orders' order, one statement per step for all of them: their
    --    units, their lots credited, their ledger transactions, plays and keys. Ids are drawn
    --    from the sequences in that order, as the Python path's inserts draw them.
    SELECT array_agg(i ORDER BY i) INTO v_sold
    FROM generate_subscripts(p_players, 1) AS i
    WHERE o_outcome[i] IS NULL;
    IF v_sold IS NOT NULL THEN
        FOR r IN
            SELECT s.i, u.lot_cents, u.cells
            FROM unnest(v_sold) AS s(i)
            CROSS JOIN LATERAL (
                SELECT un.lot_cents, un.cells FROM units AS un
                WHERE un.block_id = o_block[s.i] AND un.serial = o_serial[s.i]
            ) AS u
        LOOP
            o_outcome[r.i] := 'sold';
            o_lot[r.i] := r.lot_cents;
            o_cells[r.i] := r.cells;
        END LOOP;
        UPDATE accounts AS a SET balance_cents = a.balance_cents + o_lot[s.i]
        FROM unnest(v_sold) AS s(i)
        WHERE a.id = o_account[s.i] AND o_lot[s.i] <> 0 AND p_modes[s.i] = 'auto';
        SELECT array_agg(q.txn ORDER BY q.txn), array_agg(q.play ORDER BY q.play)
        INTO v_ids, v_play_ids
        FROM (SELECT nextval(pg_get_serial_sequence('ledger_transactions', 'id')) AS txn,
                     nextval(pg_get_serial_sequence('plays', 'id')) AS play
              FROM unnest(v_sold)) AS q;
        FOR i IN 1..cardinality(v_sold) LOOP
            o_txn[v_sold[i]] := v_ids[i];
            o_play[v_sold[i]] := v_play_ids[i];
        END LOOP;
        INSERT INTO ledger_transactions (id, kind, created_at)
        SELECT t.id, 'purchase', p_now FROM unnest(v_ids) AS t(id) ORDER BY t.id;
        INSERT INTO ledger_entries (transaction_id, account_id, amount_cents)
        SELECT o_txn[s.i], e.account, e.amount
        FROM unnest(v_sold) AS s(i)
        CROSS JOIN LATERAL (VALUES (1, o_account[s.i], -p_stakes[s.i]::bigint),
                                   (2, p_sales_account, p_stakes[s.i]::bigint),
                                   (3, p_prizes_account, -o_lot[s.i]),
                                   (4, CASE WHEN p_modes[s.i] = 'auto' THEN o_account[s.i]
                                            ELSE 0 END, o_lot[s.i])) AS e(place, account, amount)
        WHERE e.amount <> 0
        ORDER BY s.i, e.place;
        INSERT INTO plays (
            id, player_id, block_id, serial, stake_cents, mode, prize_cents, revealed,
            balance_before_cents, balance_after_cents, created_at, transaction_id
        )
        SELECT o_play[s.i], p_players[s.i], o_block[s.i], o_serial[s.i], p_stakes[s.i],
               p_modes[s.i], o_lot[s.i], p_revealed[s.i], o_after_stake[s.i] + p_stakes[s.i],
               o_after_stake[s.i] + o_lot[s.i], p_now, o_txn[s.i]
        FROM unnest(v_sold) AS s(i)
        ORDER BY s.i;
        UPDATE idempotency_keys AS k SET result_id = o_play[s.i]
        FROM unnest(v_sold) AS s(i)
        WHERE k.id = o_key[s.i];

        -- 5. The operator's accounts in id order, then the audit head, last. The records are
        --    chained here and written in one insert.
        FOREACH i IN ARRAY v_sold LOOP
            v_sold_stakes := v_sold_stakes + p_stakes[i];
            v_sold_lots := v_sold_lots + o_lot[i];
            IF p_modes[i] <> 'auto' THEN
                v_pending_lots := v_pending_lots + o_lot[i];
            END IF;
        END LOOP;
        FOR r IN
            SELECT * FROM (VALUES (p_sales_account, v_sold_stakes),
                                  (p_prizes_account, -v_sold_lots),
                                  (0, v_pending_lots)) AS m(account, amount)
            WHERE m.amount <> 0 ORDER BY m.account
        LOOP
            UPDATE accounts AS a SET balance_cents = a.balance_cents + r.amount
            WHERE a.id = r.account;
        END LOOP;
        SELECT h.seq, h.sha256 INTO v_seq, v_prev FROM audit_head AS h WHERE h.id = 1 FOR UPDATE;
        -- As Python's datetime.isoformat(): microseconds only when there are some.
        v_created := to_char(p_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
            || CASE WHEN date_trunc('second', p_now) = p_now THEN ''
                    ELSE to_char(p_now AT TIME ZONE 'UTC', '.US') END
            || '+00:00';
        FOREACH i IN ARRAY v_sold LOOP
            v_seq := v_seq + 1;
            -- Canonical JSON: keys sorted, no spaces, as pharaon.service.audit.canonical_json.
            v_payload := format(
                '{"block_id":%s,"lot_cents":%s,"play_id":%s,"player_id":%s,"serial":%s,'
                '"stake_cents":%s,"transaction_id":%s}',
                o_block[i], o_lot[i], o_play[i], p_players[i], o_serial[i], p_stakes[i], o_txn[i]
            );
            a_seq := a_seq || v_seq;
            a_actor := a_actor || ('player:' || p_players[i]);
            a_payload := a_payload || v_payload;
            a_prev := a_prev || v_prev;
            v_prev := encode(sha256(convert_to(concat_ws(E'\n', v_prev, v_seq::text, v_created,
                'purchase', 'player:' || p_players[i], v_payload), 'UTF8')), 'hex');
            a_hash := a_hash || v_prev;
        END LOOP;
        INSERT INTO audit_log (seq, created_at, kind, actor, payload, prev_sha256, sha256)
        SELECT x.seq, p_now, 'purchase', x.actor, x.payload, x.prev, x.hash
        FROM unnest(a_seq, a_actor, a_payload, a_prev, a_hash) AS x(seq, actor, payload, prev, hash)
        ORDER BY x.seq;
        UPDATE audit_head AS h SET seq = v_seq, sha256 = v_prev WHERE h.id = 1;
    END IF;

    RETURN QUERY
    SELECT o_outcome[i], o_play[i], o_key[i], o_account[i], o_block[i], o_serial[i], o_lot[i],
           o_cells[i], o_after_stake[i] + p_stakes[i], o_after_stake[i] + o_lot[i], o_until[i]
    FROM generate_subscripts(p_players, 1) AS i
    ORDER BY i;
END
$fn$
"""


def upgrade() -> None:
    chunks = op.create_table(
        "merkle_chunks",
        sa.Column("block_id", sa.Integer(), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("hashes", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["block_id"], ["blocks.id"], name=op.f("fk_merkle_chunks_block_id_blocks")
        ),
        sa.PrimaryKeyConstraint("block_id", "level", "chunk", name=op.f("pk_merkle_chunks")),
    )
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("taken_at", UTCDateTime(), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_checkpoints")),
    )
    with op.batch_alter_table("plays", schema=None) as batch_op:
        batch_op.create_index(
            "ix_plays_unfinished",
            ["block_id", "prize_cents"],
            unique=False,
            sqlite_where=sa.text("mode = 'jouer' AND revealed <> 15"),
            postgresql_where=sa.text("mode = 'jouer' AND revealed <> 15"),
        )
    accounts = sa.table(
        "accounts",
        sa.column("id", sa.Integer()),
        sa.column("kind", sa.String()),
        sa.column("player_id", sa.Integer()),
        sa.column("balance_cents", sa.BigInteger()),
    )
    op.bulk_insert(accounts, [{"id": 0, "kind": "pending", "player_id": None, "balance_cents": 0}])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(SELL)
        op.execute(f"ALTER FUNCTION {SIGNATURE} SET enable_seqscan = off")
    _keep_trees(chunks)


# The chunks as this revision stores them (service/trees.py stores them so too, at each load);
# written out here so that the migration does the same whatever later code does.
CHUNK_NODES = 256
_HASH = 32
_UNITS = sa.table(
    "units",
    sa.column("block_id", sa.Integer()),
    sa.column("serial", sa.Integer()),
    sa.column("cells", sa.LargeBinary()),
    sa.column("lot_cents", sa.BigInteger()),
)


def _keep_trees(chunks: sa.Table) -> None:
    """The Merkle trees of the blocks loaded before this revision, from their stored units:
    every level but the root, in slices of :data:`CHUNK_NODES` nodes, one row each."""
    # Here, not at the top: alembic imports every revision, and only this upgrade needs numba.
    import numpy as np

    from pharaon.pool import merkle
    from pharaon.pool.blockfile import ticket_bytes

    connection = op.get_bind()  # the migration's own transaction, which alembic ends
    for (block_id,) in connection.execute(sa.text("SELECT id FROM blocks ORDER BY id")).all():
        cells: list[bytes] = []
        lots: list[int] = []
        for blob, lot in connection.execute(
            sa.select(_UNITS.c.cells, _UNITS.c.lot_cents)
            .where(_UNITS.c.block_id == block_id)
            .order_by(_UNITS.c.serial)
        ):
            cells.append(bytes(blob))
            lots.append(int(lot))
        units = np.frombuffer(b"".join(cells), dtype=np.int8).reshape(-1, 64)
        leaves = merkle.leaf_hashes(ticket_bytes(units), np.array(lots, dtype=np.int64))
        rows = []
        # Every level but the root, which is the block's merkle_root.
        for level, nodes in enumerate(merkle.levels(leaves)[:-1]):
            blob = np.ascontiguousarray(nodes).tobytes()
            step = CHUNK_NODES * _HASH
            for chunk, start in enumerate(range(0, len(blob), step)):
                rows.append(
                    {
                        "block_id": int(block_id),
                        "level": level,
                        "chunk": chunk,
                        "hashes": blob[start : start + step],
                    }
                )
        if rows:
            connection.execute(chunks.insert(), rows)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        before = importlib.import_module("pharaon.store.migrations.versions.0002_sell_function")
        op.execute(before.SELL)
        op.execute(f"ALTER FUNCTION {SIGNATURE} SET enable_seqscan = off")
    op.execute("DELETE FROM accounts WHERE id = 0")
    with op.batch_alter_table("plays", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_plays_unfinished",
            sqlite_where=sa.text("mode = 'jouer' AND revealed <> 15"),
            postgresql_where=sa.text("mode = 'jouer' AND revealed <> 15"),
        )
    op.drop_table("audit_checkpoints")
    op.drop_table("merkle_chunks")
