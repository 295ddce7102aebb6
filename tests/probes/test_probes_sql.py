"""``record`` probes against a real SQLite file and the machine's PostgreSQL, read-only."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from helpers.pg import temporary_role

from landed.probes.contract import (
    AtLeast,
    Contains,
    Count,
    Equals,
    JsonPath,
    NonEmpty,
    Outcome,
    RecordProbe,
    Regex,
)
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    path = tmp_path / "orders.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "create table orders (id integer primary key, batch int, status text, total real)"
        )
        conn.executemany(
            "insert into orders (batch, status, total) values (?, ?, ?)",
            [(123, "paid", 10.5)] * 45 + [(124, "open", 1.0)] * 3,
        )
    return path


@pytest.fixture
async def sqlite_registry(sqlite_db: Path) -> AsyncIterator[SourceRegistry]:
    async with SourceRegistry({"orders-db": {"url": f"sqlite:///{sqlite_db}"}}) as registry:
        yield registry


async def read(registry: SourceRegistry, query: str, expect: object, **kw: object):  # type: ignore[no-untyped-def]
    probe = RecordProbe(source="orders-db", query=query, **kw)  # type: ignore[arg-type]
    return await observe(probe, expect, registry=registry, observer="test-verifier")


# --- SQLite -------------------------------------------------------------------------------------


async def test_sqlite_count_the_rows_that_landed(sqlite_registry: SourceRegistry) -> None:
    q = "select count(*) from orders where batch = ?"
    obs = await read(sqlite_registry, q, Count(value=45), params=[123])
    assert obs.outcome is Outcome.PASS and obs.value == 45
    assert (await read(sqlite_registry, q, Count(value=45), params=[999])).outcome is Outcome.EMPTY
    assert (
        await read(sqlite_registry, q, Count(value=3), params=[123])
    ).outcome is Outcome.DUPLICATED


async def test_sqlite_rows_measure_and_json_path(sqlite_registry: SourceRegistry) -> None:
    q = "select id, status from orders where batch = 124"
    assert (await read(sqlite_registry, q, Count(value=3))).outcome is Outcome.PASS
    obs = await read(sqlite_registry, q, JsonPath(path="$[0].status", value="open"))
    assert obs.outcome is Outcome.PASS
    assert (await read(sqlite_registry, q, Contains(value='"open"'))).outcome is Outcome.PASS
    one = "select id from orders where batch = 124 limit 1"
    # A one-cell id would read as a number under "auto"; measure="rows" counts the row.
    assert (
        await read(sqlite_registry, one, Count(value=1), measure="rows")
    ).outcome is Outcome.PASS
    one_status = "select status from orders where id = 1"
    assert (await read(sqlite_registry, one_status, Equals(value="paid"))).outcome is Outcome.PASS


async def test_a_whole_result_over_the_kept_size_in_bytes_is_still_judged_by_regex(
    sqlite_registry: SourceRegistry,
) -> None:
    # 3,000,000 characters fit the result budget, but their JSON is 9 MB of UTF-8: more than a
    # capture keeps by default, though nothing of the result was cut.
    q = "select replace(hex(zeroblob(1500000)), '0', '完') as v"
    obs = await read(sqlite_registry, q, Regex(value="完{10}"), measure="value")
    assert obs.outcome is Outcome.PASS, obs.message


@pytest.mark.parametrize("field", ["url", "path"])
async def test_a_sqlite_source_under_the_home_directory_is_read_there(
    sqlite_db: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    """~/ in a source's URL or path is the home directory (as for the ledger), not a folder
    named ~ under the verifier's working directory."""
    monkeypatch.setenv("HOME", str(sqlite_db.parent))
    where = "sqlite:///~/orders.db" if field == "url" else "~/orders.db"
    config = {field: where} if field == "url" else {"kind": "sql", field: where}
    async with SourceRegistry({"orders-db": config}) as registry:
        obs = await read(registry, "select count(*) from orders", Count(value=48))
    assert obs.outcome is Outcome.PASS, obs


async def test_sqlite_zero_rows_is_empty(sqlite_registry: SourceRegistry) -> None:
    obs = await read(sqlite_registry, "select * from orders where batch = 0", NonEmpty())
    assert obs.outcome is Outcome.EMPTY
    null = await read(
        sqlite_registry, "select max(total) from orders where batch = 0", AtLeast(value=1)
    )
    assert null.outcome is Outcome.EMPTY


async def test_sqlite_is_opened_read_only(sqlite_registry: SourceRegistry, sqlite_db: Path) -> None:
    for statement in (
        "delete from orders",
        "insert into orders (batch) values (1)",
        "drop table orders",
    ):
        obs = await read(sqlite_registry, statement, NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR, statement
    with sqlite3.connect(sqlite_db) as conn:
        assert conn.execute("select count(*) from orders").fetchone()[0] == 48


async def test_sqlite_probes_cannot_open_or_create_other_files(
    sqlite_registry: SourceRegistry, tmp_path: Path
) -> None:
    # A read-only connection still lets ATTACH (and VACUUM INTO, which attaches) create files
    # wherever the verifier may write, and read any other SQLite file under this source's name.
    other = tmp_path / "other-source.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table secrets (v text)")
        conn.execute("insert into secrets values ('other source')")
    made = tmp_path / "made-by-a-probe.db"
    for query in (
        f"attach database '{other}' as o",
        f"attach database '{made}' as m",
        f"vacuum into '{made}'",
        "detach database main",
    ):
        obs = await read(sqlite_registry, query, NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR, query
        assert "ATTACH" in obs.message and "one SELECT" in obs.message, obs.message
    assert not made.exists()


async def test_sqlite_pragmas_only_describe(sqlite_registry: SourceRegistry) -> None:
    # A schema check is a fair read-back of a migration.
    cols = await read(
        sqlite_registry,
        "select count(*) from pragma_table_info('orders') where name = 'total'",
        Count(value=1),
    )
    assert cols.outcome is Outcome.PASS, cols
    version = await read(sqlite_registry, "pragma user_version", Count(value=0))
    assert version.outcome is not Outcome.PROBE_ERROR, version
    # Pragmas that set anything (some for the whole verifier process) are refused.
    for query in (
        "pragma soft_heap_limit = 1",
        "pragma user_version = 5",
        "pragma temp_store_directory = '/tmp'",
        "select * from pragma_soft_heap_limit",
    ):
        obs = await read(sqlite_registry, query, NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR, query
        assert "PRAGMA" in obs.message, obs.message


async def test_sqlite_runs_one_statement_only(sqlite_registry: SourceRegistry) -> None:
    obs = await read(sqlite_registry, "select 1; delete from orders", NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR


@pytest.mark.slow
async def test_sqlite_runaway_query_is_interrupted_at_the_timeout(
    sqlite_registry: SourceRegistry,
) -> None:
    forever = (
        "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r"
    )
    started = time.monotonic()
    obs = await read(sqlite_registry, forever, Count(value=1), timeout_s=0.5)
    assert obs.outcome is Outcome.PROBE_ERROR
    assert time.monotonic() - started < 5
    assert "timeout" in obs.message or "no answer" in obs.message


async def test_sqlite_missing_file_is_a_probe_error(tmp_path: Path) -> None:
    async with SourceRegistry({"orders-db": {"url": f"sqlite:///{tmp_path / 'nope.db'}"}}) as reg:
        obs = await read(reg, "select 1", Count(value=1))
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "does not exist" in obs.message
    assert not (tmp_path / "nope.db").exists()  # read-only never creates the file


# --- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture
def pg_table(postgres_dsn: str, pg_reader_dsn: str) -> Iterator[str]:
    name = f"landed_probe_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"create table {name} (id serial primary key, batch int, status text)")
        conn.execute(
            f"insert into {name} (batch, status) select 123, 'paid' from generate_series(1, 45)"
        )
        # The source's role could write here: only the read-only transaction stops a probe.
        reader = urlsplit(pg_reader_dsn).username
        conn.execute(f"grant insert, update, delete on {name} to {reader}")
        conn.execute(f"grant usage on sequence {name}_id_seq to {reader}")
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"drop table if exists {name}")


@pytest.fixture
async def pg_registry(pg_reader_dsn: str) -> AsyncIterator[SourceRegistry]:
    async with SourceRegistry({"orders-db": {"url": pg_reader_dsn, "pool_size": 2}}) as registry:
        yield registry


async def test_postgres_count(pg_registry: SourceRegistry, pg_table: str) -> None:
    q = f"select count(*) from {pg_table} where batch = %s"
    obs = await read(pg_registry, q, Count(value=45), params=[123])
    assert obs.outcome is Outcome.PASS and obs.value == 45 and obs.source == "orders-db"
    assert (await read(pg_registry, q, Count(value=45), params=[7])).outcome is Outcome.EMPTY
    half = f"select count(*) from {pg_table} where id <= 22"
    assert (await read(pg_registry, half, Count(value=45))).outcome is Outcome.MISMATCH


async def test_postgres_rows_and_values(pg_registry: SourceRegistry, pg_table: str) -> None:
    obs = await read(
        pg_registry,
        f"select status, batch from {pg_table} where id = 1",
        JsonPath(path="$[0].batch", value=123),
    )
    assert obs.outcome is Outcome.PASS
    numeric = await read(
        pg_registry, f"select sum(batch)::numeric from {pg_table}", Count(value=45 * 123)
    )
    assert numeric.outcome is Outcome.PASS


async def test_postgres_transaction_is_read_only(
    pg_registry: SourceRegistry, pg_table: str, postgres_dsn: str
) -> None:
    for statement in (
        f"delete from {pg_table}",
        f"insert into {pg_table} (batch) values (1) returning id",
        f"with gone as (delete from {pg_table} returning 1) select count(*) from gone",
        f"drop table {pg_table}",
    ):
        obs = await read(pg_registry, statement, NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR, statement
        assert "read-only" in obs.message, obs.message
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute(f"select count(*) from {pg_table}").fetchone() == (45,)


async def test_postgres_refuses_a_second_statement(
    pg_registry: SourceRegistry, pg_table: str, postgres_dsn: str
) -> None:
    obs = await read(pg_registry, f"commit; delete from {pg_table}", NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute(f"select count(*) from {pg_table}").fetchone() == (45,)


async def test_postgres_session_changes_do_not_outlive_the_probe(
    pg_registry: SourceRegistry, pg_table: str
) -> None:
    # A probe that switches the session default to read-write is rolled back with it, so the
    # next probe on the same pooled connection is still read-only.
    await read(pg_registry, "set default_transaction_read_only = off", NonEmpty())
    for _ in range(3):
        obs = await read(pg_registry, f"delete from {pg_table}", NonEmpty())
        assert obs.outcome is Outcome.PROBE_ERROR


async def test_an_advisory_lock_a_probe_takes_does_not_outlive_it(
    pg_registry: SourceRegistry, postgres_dsn: str
) -> None:
    # Session advisory locks survive the probe's rollback; held on a pooled connection, they
    # would block whatever application uses that key, for as long as the verifier runs.
    for query, outcome in (
        ("select pg_advisory_lock({key}) is null as held", Outcome.MISMATCH),
        # Taken, then the statement fails: the transaction is left aborted.
        ("select pg_advisory_lock({key}) is null as held, 1 / 0 as boom", Outcome.PROBE_ERROR),
        ("select pg_advisory_lock_shared({key}) is null as held", Outcome.MISMATCH),
    ):
        key = uuid.uuid4().int % 2**62
        obs = await read(pg_registry, query.format(key=key), NonEmpty())
        assert obs.outcome is outcome, (query, obs.message)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            got = conn.execute("select pg_try_advisory_lock(%s)", [key]).fetchone()
            assert got == (True,), query
            conn.execute("select pg_advisory_unlock(%s)", [key])
        assert (await read(pg_registry, "select 1", Count(value=1))).outcome is Outcome.PASS


async def test_a_source_role_with_powers_on_the_server_is_refused(
    postgres_dsn: str, tmp_path: Path
) -> None:
    # A read-only transaction does not stop COPY ... TO PROGRAM or pg_read_file(): a role
    # that may do either would run the agent's SQL as commands on the database server.
    marker = tmp_path / "ran-on-the-server"
    with temporary_role(postgres_dsn, "files", "in role pg_read_server_files") as (_, files):
        for dsn, power in ((postgres_dsn, "a superuser"), (files, "pg_read_server_files")):
            async with SourceRegistry({"orders-db": {"url": dsn}}) as reg:
                obs = await read(
                    reg, f"copy (select 1) to program 'touch {marker}'", NonEmpty(), timeout_s=5
                )
                again = await read(reg, "select pg_read_file('/etc/hostname')", NonEmpty())
            for o in (obs, again):
                assert o.outcome is Outcome.PROBE_ERROR, o.message
                assert power in o.message and "CREATE ROLE landed_reader" in o.message, o.message
    assert not marker.exists()


@pytest.mark.slow
async def test_postgres_slow_query_is_a_probe_error_within_the_timeout(
    pg_registry: SourceRegistry,
) -> None:
    started = time.monotonic()
    obs = await read(pg_registry, "select pg_sleep(10)", NonEmpty(), timeout_s=0.5)
    assert obs.outcome is Outcome.PROBE_ERROR
    assert time.monotonic() - started < 4
    after = await read(pg_registry, "select 1", Count(value=1))
    assert after.outcome is Outcome.PASS  # the pooled connection survived the cancel


@pytest.mark.slow
async def test_postgres_huge_result_is_refused_not_buffered(pg_registry: SourceRegistry) -> None:
    obs = await read(pg_registry, "select generate_series(1, 5000000)", NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "more than" in obs.message


async def test_postgres_connection_refused_is_a_probe_error() -> None:
    async with SourceRegistry(
        {"orders-db": {"url": "postgresql://postgres@127.0.0.1:1/test"}}
    ) as reg:
        obs = await read(reg, "select 1", Count(value=1), timeout_s=3)
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "could not connect" in obs.message


async def test_postgres_pool_serves_concurrent_probes(
    pg_registry: SourceRegistry, pg_table: str
) -> None:
    import asyncio

    q = f"select count(*) from {pg_table}"
    results = await asyncio.gather(*(read(pg_registry, q, Count(value=45)) for _ in range(20)))
    assert {r.outcome for r in results} == {Outcome.PASS}


async def test_a_single_zero_is_no_pass_under_the_weak_default(
    sqlite_registry: SourceRegistry,
) -> None:
    """count(*) = 0 returned a row, yet nothing landed: not a pass, and not "empty" either
    (an exit code of 0 would look the same); measure=value says the 0 is a value."""
    zero = await read(sqlite_registry, "select count(*) from orders where batch = 7", NonEmpty())
    assert zero.outcome is Outcome.MISMATCH, zero.message
    assert "expect count or at_least" in (zero.message or "")
    some = await read(sqlite_registry, "select count(*) from orders where batch = 124", NonEmpty())
    assert some.outcome is Outcome.PASS, some.message
    code = await read(sqlite_registry, "select 0 as exit_code", NonEmpty(), measure="value")
    assert code.outcome is Outcome.PASS, code.message


async def test_postgres_numbers_a_float_would_round_are_never_judged(
    pg_registry: SourceRegistry,
) -> None:
    for query, expect in (
        ("select 99.99999999999999999::numeric as paid", AtLeast(value=100)),
        ("select 44.999999999999999999::numeric as n", Count(value=45)),
        ("select 'infinity'::float8 as n", AtLeast(value=1)),
        ("select 'NaN'::numeric as n", Count(value=1)),
    ):
        obs = await read(pg_registry, query, expect)
        assert obs.outcome is Outcome.PROBE_ERROR, (query, obs.outcome, obs.message)
        assert "cannot be judged exactly" in (obs.message or ""), obs.message
    # A decimal the float holds exactly is judged as that number.
    exact = await read(pg_registry, "select 100.10::numeric as paid", AtLeast(value=100))
    assert exact.outcome is Outcome.PASS and exact.value == 100.1, exact.message


async def test_a_result_larger_than_the_read_cap_is_refused_as_it_arrives(
    sqlite_registry: SourceRegistry,
) -> None:
    obs = await read(sqlite_registry, "select randomblob(9000000) as blob", NonEmpty())
    assert obs.outcome is Outcome.PROBE_ERROR, obs.message
    assert "more than 8388608 bytes" in (obs.message or ""), obs.message
    assert obs.evidence is None  # refused before any copy of it was made


@pytest.mark.parametrize(
    "query",
    [
        "select cast(count(*) as text) from orders where batch = 999",  # "0", not one row
        "select 'false' as found",
        "select 'no' as found",
    ],
)
async def test_a_single_count_or_yes_no_cell_is_judged_as_the_value_not_as_one_row(
    sqlite_registry: SourceRegistry, query: str
) -> None:
    for expect in (Count(value=1), AtLeast(value=1)):
        obs = await read(sqlite_registry, query, expect)
        assert obs.outcome is not Outcome.PASS, (query, expect, obs.message)
    # A single text cell that is a row's content still counts as the row.
    named = await read(sqlite_registry, "select 'alice' as name", Count(value=1))
    assert named.outcome is Outcome.PASS


async def test_postgres_exists_false_is_not_one_row(
    pg_registry: SourceRegistry, pg_table: str
) -> None:
    q = f"select exists(select 1 from {pg_table} where batch = 999)"
    assert (await read(pg_registry, q, Count(value=1))).outcome is not Outcome.PASS
    q = f"select exists(select 1 from {pg_table} where batch = 123)"
    assert (
        await read(pg_registry, q, Count(value=1))
    ).outcome is not Outcome.PASS  # true: no count


async def test_a_before_reading_of_another_probe_is_refused(
    sqlite_registry: SourceRegistry,
) -> None:
    other = await read(
        sqlite_registry, "select count(*) from orders where batch = 999", Count(value=45)
    )
    probe = RecordProbe(source="orders-db", query="select count(*) from orders where batch = 123")
    with pytest.raises(ValueError, match="another probe"):
        await observe(probe, Count(value=45), registry=sqlite_registry, observer="v", before=other)


@pytest.mark.parametrize(
    "document",
    [
        '{"amount": 5, "amount": 100}',  # two keys: json keeps the last, jsonb the last too
        '{"amount": 99.99999999999999999}',  # a float would read 100.0
    ],
)
async def test_a_postgres_json_cell_is_parsed_as_strictly_as_any_json(
    pg_registry: SourceRegistry, document: str
) -> None:
    q = f"select '{document}'::json as doc"
    obs = await read(pg_registry, q, JsonPath(path="$[0].doc.amount", op=">=", value=100))
    assert obs.outcome is not Outcome.PASS, obs.message
    assert "cannot be judged exactly" in obs.message
    fine = await read(
        pg_registry,
        "select '{\"amount\": 100}'::jsonb as doc",
        JsonPath(path="$[0].doc.amount", value=100),
    )
    assert fine.outcome is Outcome.PASS, fine.message


async def test_a_member_of_a_superuser_role_is_refused_and_the_probe_says_why(
    postgres_dsn: str,
) -> None:
    # SET ROLE to the superuser role it belongs to, within one statement, would run anything.
    with temporary_role(postgres_dsn, "member", "noinherit in role postgres") as (_, dsn):
        async with SourceRegistry({"orders-db": {"url": dsn}}) as reg:
            obs = await read(reg, "select 1", Count(value=1), timeout_s=3)
    assert obs.outcome is Outcome.PROBE_ERROR
    assert "may become) a superuser" in obs.message, obs.message


async def test_a_superuser_login_with_a_lesser_session_role_is_refused(
    postgres_dsn: str, pg_reader_dsn: str
) -> None:
    # A probe can reset a role set for the session to the login role within one statement.
    reader = urlsplit(pg_reader_dsn).username
    dsn = f"{postgres_dsn}?options=-c%20role%3D{reader}"
    async with SourceRegistry({"orders-db": {"url": dsn}}) as reg:
        obs = await read(reg, "select 1", Count(value=1), timeout_s=3)
    assert obs.outcome is Outcome.PROBE_ERROR and "a superuser" in obs.message, obs.message


@pytest.mark.slow
async def test_a_power_granted_while_the_pool_runs_refuses_its_older_connections(
    postgres_dsn: str,
) -> None:
    import asyncio

    with temporary_role(postgres_dsn, "plain") as (plain, dsn):
        async with SourceRegistry({"orders-db": {"url": dsn, "pool_size": 2}}) as reg:
            assert (await read(reg, "select 1", Count(value=1))).outcome is Outcome.PASS
            with psycopg.connect(postgres_dsn, autocommit=True) as conn:
                conn.execute(f"grant pg_read_server_files to {plain}")
            # Two at once: the pool opens a second connection, which is refused.
            await asyncio.gather(
                *(read(reg, "select pg_sleep(0.5) is null", NonEmpty(), timeout_s=3) for _ in "ab")
            )
            after = await read(reg, "select 1", Count(value=1), timeout_s=3)
    assert after.outcome is Outcome.PROBE_ERROR, after.message
    assert "pg_read_server_files" in after.message, after.message
