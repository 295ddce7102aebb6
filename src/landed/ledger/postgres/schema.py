"""PostgreSQL ledger schema: versioned, idempotent migrations and the INSERT-only writer role."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.chain import MIGRATION_KEY_ID, ChainHead

__all__ = ["CHAIN_V2_STEP", "SCHEMA_VERSION", "migrate", "schema_version"]

SCHEMA_VERSION = 8
_CHAIN_STEP = 4
CHAIN_V2_STEP = 7
_BACKFILL_PAGE = 5000

# {s} is the schema, {r} the writer role; each step runs once, with its version row, in one
# transaction. Steps are never edited once released: a change is a new step.
_STEPS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE {s}.landed_receipts (
            sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            task_id text NOT NULL,
            attempt integer NOT NULL CHECK (attempt >= 1),
            verdict text,
            owner text,
            settled_at timestamptz,
            body_sha256 text NOT NULL,
            body text NOT NULL,
            appended_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (task_id, attempt)
        )""",
        "CREATE INDEX ON {s}.landed_receipts (verdict)",
        "CREATE INDEX ON {s}.landed_receipts (owner)",
        "CREATE INDEX ON {s}.landed_receipts (settled_at)",
        """CREATE FUNCTION {s}.landed_reject_change() RETURNS trigger LANGUAGE plpgsql AS $f$
        BEGIN
            RAISE EXCEPTION 'the landed ledger is append-only: % on %.% is not allowed',
                TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
                USING HINT = 'settle a new attempt instead of changing a stored receipt';
        END $f$""",
        """CREATE TRIGGER landed_receipts_append_only BEFORE UPDATE OR DELETE
           ON {s}.landed_receipts FOR EACH ROW EXECUTE FUNCTION {s}.landed_reject_change()""",
        """CREATE TRIGGER landed_receipts_no_truncate BEFORE TRUNCATE
           ON {s}.landed_receipts FOR EACH STATEMENT EXECUTE FUNCTION {s}.landed_reject_change()""",
        "REVOKE ALL ON {s}.landed_receipts FROM PUBLIC",
        # Roles are cluster-wide: another schema's migration may have made it already.
        """DO $r$ BEGIN CREATE ROLE {r} NOLOGIN;
           EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $r$""",
        "GRANT USAGE ON SCHEMA {s} TO {r}",
        "GRANT SELECT, INSERT ON {s}.landed_receipts TO {r}",
        "GRANT SELECT ON {s}.landed_schema_version TO {r}",
    ],
    # Claims: which run was about to run which act attempt (see Ledger.claim).
    2: [
        """CREATE TABLE {s}.landed_claims (
            task_id text NOT NULL,
            run_id text NOT NULL,
            attempt integer NOT NULL CHECK (attempt >= 1),
            spec_sha256 text NOT NULL,
            claimed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (task_id, run_id, attempt)
        )""",
        """CREATE TRIGGER landed_claims_append_only BEFORE UPDATE OR DELETE
           ON {s}.landed_claims FOR EACH ROW EXECUTE FUNCTION {s}.landed_reject_change()""",
        """CREATE TRIGGER landed_claims_no_truncate BEFORE TRUNCATE
           ON {s}.landed_claims FOR EACH STATEMENT EXECUTE FUNCTION {s}.landed_reject_change()""",
        "REVOKE ALL ON {s}.landed_claims FROM PUBLIC",
        "GRANT SELECT, INSERT ON {s}.landed_claims TO {r}",
    ],
    # A row's key is (task_id, attempt, stage): a recheck's lifecycle row (confirmed,
    # reversed) is appended beside the task's settled row (stage 'settle').
    3: [
        "ALTER TABLE {s}.landed_receipts ADD COLUMN stage text NOT NULL DEFAULT 'settle'",
        "ALTER TABLE {s}.landed_receipts DROP CONSTRAINT landed_receipts_task_id_attempt_key",
        "ALTER TABLE {s}.landed_receipts ADD UNIQUE (task_id, attempt, stage)",
    ],
    # The hash chain and the runner's signed heads (landed.ledger.chain); the rows already
    # stored get their links after these statements (_chain_stored), in sequence order.
    4: [
        """ALTER TABLE {s}.landed_receipts ADD COLUMN chain_pos bigint,
           ADD COLUMN chain_link text""",
        """CREATE TABLE {s}.landed_chain_heads (
            chain_pos bigint NOT NULL,
            sequence bigint NOT NULL,
            chain_link text NOT NULL,
            key_id text NOT NULL,
            signed_at text NOT NULL,
            signature text NOT NULL,
            PRIMARY KEY (key_id, chain_pos)
        )""",
        """CREATE TRIGGER landed_chain_heads_append_only BEFORE UPDATE OR DELETE
           ON {s}.landed_chain_heads FOR EACH ROW EXECUTE FUNCTION {s}.landed_reject_change()""",
        """CREATE TRIGGER landed_chain_heads_no_truncate BEFORE TRUNCATE ON {s}.landed_chain_heads
           FOR EACH STATEMENT EXECUTE FUNCTION {s}.landed_reject_change()""",
        "REVOKE ALL ON {s}.landed_chain_heads FROM PUBLIC",
        "GRANT SELECT, INSERT ON {s}.landed_chain_heads TO {r}",
    ],
    # Events (landed.ledger.events): a tripwire's trips, append-only like receipts, keyed so a
    # retried write stores one row; on a chain of their own since step 7 (links v2).
    5: [
        """CREATE TABLE {s}.landed_events (
            sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            event_key text NOT NULL UNIQUE,
            kind text NOT NULL,
            loop text,
            at timestamptz NOT NULL,
            body text NOT NULL,
            appended_at timestamptz NOT NULL DEFAULT now()
        )""",
        "CREATE INDEX ON {s}.landed_events (loop, sequence)",
        """CREATE TRIGGER landed_events_append_only BEFORE UPDATE OR DELETE
           ON {s}.landed_events FOR EACH ROW EXECUTE FUNCTION {s}.landed_reject_change()""",
        """CREATE TRIGGER landed_events_no_truncate BEFORE TRUNCATE
           ON {s}.landed_events FOR EACH STATEMENT EXECUTE FUNCTION {s}.landed_reject_change()""",
        "REVOKE ALL ON {s}.landed_events FROM PUBLIC",
        "GRANT SELECT, INSERT ON {s}.landed_events TO {r}",
    ],
    # A claim names its task's owner and loop, so a task still acting is counted under them
    # (the exporter's tasks started) without waiting for its receipt; older claims have NULL.
    6: [
        "ALTER TABLE {s}.landed_claims ADD COLUMN owner text",
        "ALTER TABLE {s}.landed_claims ADD COLUMN loop text",
    ],
    # Links v2 (landed.ledger.links): claims and events get chains of their own, a head carries
    # every chain's tail and the positions its signer wrote (its key may sign several heads at
    # one receipts position), and every stored row is re-chained (landed.ledger.postgres.rechain).
    7: [
        "ALTER TABLE {s}.landed_claims ADD COLUMN chain_pos bigint, ADD COLUMN chain_link text",
        "ALTER TABLE {s}.landed_events ADD COLUMN chain_pos bigint, ADD COLUMN chain_link text",
        "ALTER TABLE {s}.landed_chain_heads ADD COLUMN detail text",
        "ALTER TABLE {s}.landed_chain_heads DROP CONSTRAINT landed_chain_heads_pkey",
        "ALTER TABLE {s}.landed_chain_heads ADD PRIMARY KEY (key_id, chain_pos, signed_at)",
        "CREATE INDEX ON {s}.landed_claims (chain_pos)",
    ],
    # The loop index (landed.ledger.reads): a tripwire's catch-up reads its loop's newest
    # settlements by it, without reading the whole board. An index on the loop the body names:
    # no column is added, no stored row is written again. A body that is not JSON names no
    # loop (NULL), so a row no reader can parse is still stored and reported, not refused.
    8: [
        """CREATE OR REPLACE FUNCTION {s}.landed_loop_of(body text) RETURNS text
           LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
           BEGIN
               RETURN body::jsonb -> 'landed' ->> 'loop';
           EXCEPTION WHEN others THEN
               RETURN NULL;
           END $f$""",
        "CREATE INDEX IF NOT EXISTS landed_receipts_loop ON {s}.landed_receipts"
        " ({s}.landed_loop_of(body), settled_at, task_id)",
    ],
}


async def _chain_stored(
    conn: psycopg.AsyncConnection[Any], names: dict[str, sql.Identifier], schema: str
) -> None:
    """Let the writer draw sequence numbers (an append links on its row's sequence before it
    inserts it), link the rows stored before this step in sequence order, and leave a marker
    row saying so: `landed ledger verify` reports that the chain covers them only from here."""
    table = sql.SQL("{s}.landed_receipts").format(**names)
    cur = await conn.execute(
        "SELECT pg_get_serial_sequence(format('%%I.landed_receipts', %s::text), 'sequence')",
        (schema,),
    )
    row = await cur.fetchone()
    assert row is not None and row[0]
    await conn.execute(
        sql.SQL("GRANT USAGE ON SEQUENCE {} TO {r}").format(sql.SQL(row[0]), **names)
    )
    await conn.execute(
        sql.SQL("ALTER TABLE {} DISABLE TRIGGER landed_receipts_append_only").format(table)
    )
    head, after = ChainHead(), 0
    while True:
        cur = await conn.execute(
            sql.SQL(
                "SELECT sequence, body_sha256 FROM {} WHERE sequence > %s"
                " ORDER BY sequence LIMIT %s"
            ).format(table),
            (after, _BACKFILL_PAGE),
        )
        page = await cur.fetchall()
        seqs, poss, links = [], [], []
        for sequence, sha in page:
            head = head.next(int(sequence), str(sha))
            seqs.append(head.sequence)
            poss.append(head.pos)
            links.append(head.link)
        await conn.execute(
            sql.SQL(
                "UPDATE {} AS t SET chain_pos = u.pos, chain_link = u.link FROM unnest("
                "%s::bigint[], %s::bigint[], %s::text[]) AS u(seq, pos, link)"
                " WHERE t.sequence = u.seq"
            ).format(table),
            (seqs, poss, links),
        )
        if len(page) < _BACKFILL_PAGE:
            break
        after = seqs[-1]
    await conn.execute(
        sql.SQL("ALTER TABLE {} ENABLE TRIGGER landed_receipts_append_only").format(table)
    )
    if head.pos:
        await conn.execute(
            sql.SQL(
                "INSERT INTO {s}.landed_chain_heads (chain_pos, sequence, chain_link, key_id,"
                " signed_at, signature) VALUES (%s, %s, %s, %s, now()::text, '')"
            ).format(**names),
            (head.pos, head.sequence, head.link, MIGRATION_KEY_ID),
        )


async def schema_version(conn: psycopg.AsyncConnection[Any], schema: str) -> int:
    """The applied schema version, 0 when the ledger tables do not exist yet."""
    cur = await conn.execute(
        "SELECT to_regclass(format('%%I.landed_schema_version', %s::text)) IS NOT NULL", (schema,)
    )
    row = await cur.fetchone()
    if not row or not row[0]:
        return 0
    table = sql.Identifier(schema, "landed_schema_version")
    cur = await conn.execute(sql.SQL("SELECT max(version) FROM {}").format(table))
    row = await cur.fetchone()
    return int(row[0] or 0) if row else 0


async def migrate(conn: psycopg.AsyncConnection[Any], schema: str, role: str) -> int:
    """Bring the schema to SCHEMA_VERSION; safe to run again and from several processes."""
    names = {"s": sql.Identifier(schema), "r": sql.Identifier(role)}
    current = await schema_version(conn, schema)
    try:
        async with conn.transaction():
            # One migrator per schema at a time; the others wait, then find nothing to do.
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('landed-ledger:' || %s, 0))",
                (schema,),
            )
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {s}").format(**names))
            await conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {s}.landed_schema_version (version integer "
                    "PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                ).format(**names)
            )
            current = await schema_version(conn, schema)
            for step in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _STEPS[step]:
                    await conn.execute(sql.SQL(statement).format(**names))
                if step == _CHAIN_STEP:
                    await _chain_stored(conn, names, schema)
                if step == CHAIN_V2_STEP:
                    from landed.ledger.postgres.rechain import rechain_v2

                    await rechain_v2(conn, schema)
                await conn.execute(
                    sql.SQL("INSERT INTO {s}.landed_schema_version (version) VALUES (%s)").format(
                        **names
                    ),
                    (step,),
                )
    except psycopg.errors.InsufficientPrivilege as exc:
        if current >= 1:
            raise LedgerError(
                f"the ledger in schema {schema!r} is at schema version {current} and this "
                f"landed needs {SCHEMA_VERSION}; this login may not upgrade it "
                f"({exc.diag.message_primary}): run `landed ledger init --ledger URL` once as "
                "the database owner, then start the runner again"
            ) from exc
        raise LedgerError(
            f"cannot create the ledger in schema {schema!r}: {exc.diag.message_primary}; "
            "open it once as the database owner (with CREATEROLE), then let the runner connect "
            f"as a login role granted {role!r}"
        ) from exc
    except psycopg.Error as exc:
        raise LedgerError(f"migrating the ledger in schema {schema!r} failed: {exc}") from exc
    return SCHEMA_VERSION
