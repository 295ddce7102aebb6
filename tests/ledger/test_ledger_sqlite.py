"""The SQLite ledger on real files: append-only, idempotent per (task, attempt), a board."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.ledger_claims import (
    check_claims,
    check_concurrent_claims,
    check_opposite_orders_do_not_deadlock,
)

from landed.ledger.base import (
    DEFAULT_LEDGER_PATH,
    LEDGER_URL_ENV,
    Ledger,
    LedgerConflict,
    LedgerError,
    LedgerNotFound,
    canonical_json,
)
from landed.ledger.factory import open_ledger
from landed.ledger.sqlite.schema import SCHEMA_VERSION
from landed.receipts.model import LandedExtension, Receipt


def receipt(task_id: str, attempt: int = 1, verdict: str = "verified", **extra: object) -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        verdict_by="runner",
        settled_at=datetime(2026, 11, 7, 1, 0, attempt, tzinfo=UTC),
        landed=LandedExtension(attempt=attempt),
        **extra,
    )


def url(path: Path) -> str:
    return f"sqlite:///{path}"


async def test_append_is_idempotent_per_task_and_attempt(tmp_path: Path) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        assert isinstance(ledger, Ledger)
        assert await ledger.append(receipt("a")) is True
        assert await ledger.append(receipt("a")) is False
        assert await ledger.append(receipt("a", attempt=2)) is True
        assert await ledger.count() == 2


async def test_same_attempt_with_other_content_is_a_conflict_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        await ledger.append(receipt("a"))
        with pytest.raises(LedgerConflict, match="task 'a' attempt 1 is already settled") as err:
            await ledger.append(receipt("a", verdict="failed"))
        assert err.value.task_id == "a" and err.value.attempt == 1
        assert [r.verdict for r in await ledger.get("a")] == ["verified"]


async def test_append_many_stores_the_rest_then_reports_the_conflict(tmp_path: Path) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        await ledger.append(receipt("b"))
        batch = [receipt("a"), receipt("b", verdict="failed"), receipt("c"), receipt("a")]
        with pytest.raises(LedgerConflict, match="'b'"):
            await ledger.append_many(batch)
        assert {r.task_id for r in await ledger.board()} == {"a", "b", "c"}
        assert await ledger.count() == 3
        assert await ledger.append_many([receipt("a"), receipt("d")]) == [False, True]


async def test_board_is_the_latest_attempt_per_task(tmp_path: Path) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        # Attempt 2 settles before a late attempt 1: the board still shows attempt 2.
        await ledger.append(receipt("b", attempt=2, verdict="verified"))
        await ledger.append(receipt("b", attempt=1, verdict="failed"))
        await ledger.append(receipt("a", attempt=1, verdict="held"))
        board = await ledger.board()
        assert [(r.task_id, r.verdict) for r in board] == [("a", "held"), ("b", "verified")]
        latest = await ledger.latest("b")
        assert latest is not None and latest.landed is not None and latest.landed.attempt == 2
        assert await ledger.latest("missing") is None
        assert [r.landed.attempt for r in await ledger.get("b") if r.landed] == [1, 2]


async def test_iter_receipts_streams_every_receipt_in_append_order(tmp_path: Path) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        ids = [f"t{i:04d}" for i in range(1203)][::-1]  # more than two pages, not sorted by id
        await ledger.append_many(receipt(t) for t in ids)
        assert [r.task_id async for r in ledger.iter_receipts()] == ids


async def test_the_stored_body_is_the_canonical_receipt(tmp_path: Path) -> None:
    r = receipt("a", report="Merged and confirmed.", target="https://example.com/pricing")
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        await ledger.append(r)
    with sqlite3.connect(tmp_path / "l.db") as db:
        body, sha, verdict, settled = db.execute(
            "SELECT body, body_sha256, verdict, settled_at FROM landed_receipts"
        ).fetchone()
    assert body.encode() == canonical_json(r)
    assert len(sha) == 64 and verdict == "verified" and settled.startswith("2026-11-07T01:00:01")


async def test_update_and_delete_are_rejected_by_triggers(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    with sqlite3.connect(path) as db:
        with pytest.raises(sqlite3.IntegrityError, match="append-only: UPDATE"):
            db.execute("UPDATE landed_receipts SET verdict = 'failed'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE"):
            db.execute("DELETE FROM landed_receipts")
    async with await open_ledger(url(path)) as ledger:
        assert [r.verdict for r in await ledger.board()] == ["verified"]


async def test_concurrent_appends_of_one_attempt_store_one_row(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    # Two ledgers are two connections on two threads: SQLite itself arbitrates.
    first, second = await open_ledger(url(path)), await open_ledger(url(path))
    try:
        results = await asyncio.gather(
            *(ledger.append(receipt("same")) for ledger in [first, second] * 10)
        )
    finally:
        await first.close()
        await second.close()
    assert sorted(results) == [False] * 19 + [True]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM landed_receipts").fetchone() == (1,)


@pytest.mark.slow
async def test_concurrent_settles_of_distinct_tasks_all_land(tmp_path: Path) -> None:
    # Group commit: many appends share a transaction, and each caller still gets its own answer.
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        results = await asyncio.gather(*(ledger.append(receipt(f"t{i}")) for i in range(300)))
        assert results == [True] * 300
        assert await ledger.count() == 300


async def test_file_is_wal_full_sync_in_created_directories_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "ledger.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    async with await open_ledger(str(path)) as ledger:  # a bare path works too
        assert await ledger.count() == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        versions = db.execute("SELECT version FROM landed_schema_version ORDER BY version")
        assert versions.fetchall() == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


async def test_default_url_is_dot_landed_ledger_db_unless_the_env_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(LEDGER_URL_ENV, raising=False)
    async with await open_ledger(None) as ledger:
        await ledger.append(receipt("a"))
    assert (tmp_path / DEFAULT_LEDGER_PATH).is_file()
    monkeypatch.setenv(LEDGER_URL_ENV, url(tmp_path / "env.db"))
    async with await open_ledger() as ledger:
        assert ledger.url.endswith("env.db") and await ledger.count() == 0


async def test_read_only_open_never_creates(tmp_path: Path) -> None:
    with pytest.raises(LedgerNotFound, match="no ledger at"):
        await open_ledger(url(tmp_path / "missing.db"), create=False)
    assert not (tmp_path / "missing.db").exists()
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(LedgerNotFound, match="not a landed ledger"):
        await open_ledger(url(foreign), create=False)


async def test_reading_a_file_that_is_not_a_ledger_leaves_it_as_it_was(tmp_path: Path) -> None:
    app_db, empty = tmp_path / "app.db", tmp_path / "empty.db"
    with sqlite3.connect(app_db) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    empty.touch()
    before = {p: p.read_bytes() for p in (app_db, empty)}
    for path in (app_db, empty):
        with pytest.raises(LedgerNotFound, match="not a landed ledger"):
            await open_ledger(url(path), create=False)
    # Same bytes (still journal_mode=delete, the empty file still empty), no -wal beside them.
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "empty.db"]
    # And a writer will not make another program's database its ledger.
    with pytest.raises(LedgerError, match=r"another database \(tables: users\)"):
        await open_ledger(url(app_db))
    assert app_db.read_bytes() == before[app_db]


async def test_a_stored_receipt_cannot_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    forged = canonical_json(receipt("a", verdict="failed")).decode()
    with sqlite3.connect(path) as db:
        for verb in ("INSERT OR REPLACE INTO", "REPLACE INTO"):
            cur = db.execute(
                f"{verb} landed_receipts (task_id, attempt, verdict, body_sha256, body)"
                " VALUES ('a', 1, 'failed', 'x', ?)",
                (forged,),
            )
            assert cur.rowcount == 0  # dropped by the trigger: nothing replaced
        assert db.execute("SELECT sequence, verdict FROM landed_receipts").fetchall() == [
            (1, "verified")
        ]
    db.close()
    async with await open_ledger(url(path), create=False) as ledger:
        assert [r.verdict for r in await ledger.get("a")] == ["verified"]
    async with await open_ledger(url(path)) as ledger:  # landed's own retry is still a no-op
        assert await ledger.append(receipt("a")) is False


async def test_a_ledger_of_the_first_schema_reads_as_is_and_a_writer_upgrades_it(
    tmp_path: Path,
) -> None:
    from landed.ledger.sqlite.schema import MIGRATIONS as _MIGRATIONS

    path = tmp_path / "v1.db"
    first = canonical_json(receipt("a"))
    first_sha = hashlib.sha256(first).hexdigest()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE landed_schema_version (version INTEGER PRIMARY KEY)")
        for statement in _MIGRATIONS[1]:
            db.execute(statement)
        db.execute("INSERT INTO landed_schema_version VALUES (1)")
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, verdict, body_sha256, body)"
            " VALUES ('a', 1, 'verified', ?, ?)",
            (first_sha, first.decode()),
        )
    db.close()
    async with await open_ledger(url(path), create=False) as ledger:
        assert [r.task_id for r in await ledger.board()] == ["a"]
    async with await open_ledger(url(path)) as ledger:
        assert await ledger.append(receipt("b")) is True
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT max(version) FROM landed_schema_version").fetchone() == (
            SCHEMA_VERSION,
        )
        replaced = db.execute(
            "REPLACE INTO landed_receipts (task_id, attempt, body_sha256, body)"
            " VALUES ('a', 1, 'y', '{}')"
        )
        assert replaced.rowcount == 0
        assert db.execute(
            "SELECT body_sha256 FROM landed_receipts WHERE task_id = 'a'"
        ).fetchone() == (first_sha,)
        # A stored key's insert reads as "already there" (no error) on the upgraded file.
        again = db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, stage, body_sha256, body)"
            " VALUES ('a', 1, 'settle', 'z', '{}') ON CONFLICT (task_id, attempt, stage)"
            " DO NOTHING"
        )
        assert again.rowcount == 0
        # Schema 6 keys a row by its stage too (a recheck's row beside the settled one): a
        # runner from before it names the old key and is refused until it is upgraded.
        with pytest.raises(sqlite3.OperationalError, match="ON CONFLICT clause"):
            db.execute(
                "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body)"
                " VALUES ('a', 1, 'z', '{}') ON CONFLICT (task_id, attempt) DO NOTHING"
            )
    db.close()


async def test_a_plain_sqlite3_client_cannot_replace_a_row_by_its_rowid(tmp_path: Path) -> None:
    """REPLACE naming a stored sequence (or a claim's rowid) deletes that row without firing the
    DELETE trigger in a connection with default pragmas; the ledger refuses it before that."""
    path = tmp_path / "l.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
        await ledger.claim("t", "run-1", 1, "d1")
    forged = canonical_json(receipt("forged", verdict="verified")).decode()
    sha = hashlib.sha256(forged.encode()).hexdigest()
    db = sqlite3.connect(path, isolation_level=None)  # the sqlite3 shell's defaults
    try:
        assert db.execute("PRAGMA recursive_triggers").fetchone() == (0,)
        for verb in ("INSERT OR REPLACE INTO", "REPLACE INTO"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(
                    f"{verb} landed_receipts (sequence, task_id, attempt, body_sha256, body)"
                    " VALUES (1, 'forged', 1, ?, ?)",
                    (sha, forged),
                )
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(
                "INSERT INTO landed_receipts (sequence, task_id, attempt, body_sha256, body)"
                " VALUES (1, 'forged', 1, ?, ?) ON CONFLICT (sequence) DO UPDATE SET body = 'x'",
                (sha, forged),
            )
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(
                "INSERT OR REPLACE INTO landed_claims (rowid, task_id, run_id, attempt,"
                " spec_sha256, claimed_at) VALUES (1, 'x', 'run-x', 1, 'forged', '2000')"
            )
        assert db.execute("SELECT sequence, task_id FROM landed_receipts").fetchall() == [(1, "a")]
        assert db.execute("SELECT rowid, run_id FROM landed_claims").fetchall() == [(1, "run-1")]
        # A new row is still an append.
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body) VALUES"
            " ('forged', 1, ?, ?)",
            (sha, forged),
        )
    finally:
        db.close()


async def test_a_row_whose_body_does_not_match_its_hash_is_named_never_shown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    body = canonical_json(receipt("b", verdict="verified")).decode()
    stale = hashlib.sha256(b"another body").hexdigest()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body)"
            " VALUES ('b', 1, ?, ?)",
            (stale, body),
        )
    db.close()
    async with await open_ledger(url(path), create=False) as ledger:
        with pytest.raises(LedgerError, match=r"row 2 of the ledger .* does not match its body"):
            await ledger.board()
        with pytest.raises(LedgerError, match="row 2 of the ledger"):
            _ = [r async for r in ledger.iter_receipts()]
        with pytest.raises(LedgerError, match="row 2 of the ledger"):
            await ledger.latest("b")
        assert [r.task_id for r in await ledger.get("a")] == ["a"]


async def test_a_row_that_is_not_a_receipt_is_named_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO landed_receipts (task_id, attempt, body_sha256, body)"
            " VALUES ('b', 1, ?, 'not json')",
            (hashlib.sha256(b"not json").hexdigest(),),
        )
    db.close()
    async with await open_ledger(url(path), create=False) as ledger:
        with pytest.raises(LedgerError, match=r"row 2 of the ledger .* is not a receipt"):
            await ledger.board()
        with pytest.raises(LedgerError, match="row 2 of the ledger"):
            _ = [r async for r in ledger.iter_receipts()]
        assert [r.task_id for r in await ledger.get("a")] == ["a"]


async def test_url_paths_are_decoded_and_the_reported_url_opens_the_same_file(
    tmp_path: Path,
) -> None:
    odd = tmp_path / "my ledger?v=1%.db"
    async with await open_ledger(str(odd)) as ledger:  # a bare path is taken literally
        await ledger.append(receipt("a"))
        reported = ledger.url
    assert odd.is_file() and "%20" in reported
    async with await open_ledger(reported, create=False) as again:
        assert await again.count() == 1


async def test_claims_name_the_first_other_run_and_never_change(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    async with await open_ledger(url(path)) as ledger:
        await check_claims(ledger, receipt("u"))
    with sqlite3.connect(path) as db:
        for statement in ("UPDATE landed_claims SET run_id = 'x'", "DELETE FROM landed_claims"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(statement)
        replaced = db.execute(
            "REPLACE INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at)"
            " VALUES ('t', 'run-1', 1, 'forged', '2000-01-01T00:00:00')"
        )
        assert replaced.rowcount == 0
        kept = db.execute("SELECT spec_sha256 FROM landed_claims WHERE run_id = 'run-1'")
        assert kept.fetchall() == [("d1",), ("d1",)]
    db.close()


async def test_a_writer_refuses_a_ledger_newer_than_its_code(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO landed_schema_version (version) VALUES (99)")
    db.close()
    with pytest.raises(LedgerError, match="schema version 99, newer than"):
        await open_ledger(url(path))
    async with await open_ledger(url(path), create=False) as ledger:  # reading still works
        assert await ledger.count() == 1


async def test_a_leading_tilde_is_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    for n, url in enumerate(["~/bare.db", "sqlite:///~/url.db"]):
        async with await open_ledger(url) as ledger:
            await ledger.append(receipt(f"t{n}"))
    assert sorted(p.name for p in home.iterdir() if p.suffix == ".db") == ["bare.db", "url.db"]
    assert not (work / "~").exists()
    # A folder literally named ~ is still reached with ./, and ~name is a file name; the URL
    # each reports opens the same file again.
    for n, url in enumerate(["./~/literal.db", "~name.db"]):
        async with await open_ledger(url) as ledger:
            await ledger.append(receipt(f"u{n}"))
            reported = ledger.url
        async with await open_ledger(reported, create=False) as again:
            assert [r.task_id for r in await again.board()] == [f"u{n}"]
    assert (work / "~" / "literal.db").is_file() and (work / "~name.db").is_file()
    assert not (home / "literal.db").exists()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("mysql://x/y", "unknown ledger URL scheme 'mysql'"),
        ("sqlite://host/x.db", "has a host part"),
        ("sqlite:///:memory:", "must be a file"),
        ("sqlite:///x.db?synchronous=off", "synchronous='off' is not supported"),
        ("sqlite:///x.db?mode=ro", r"unknown parameter\(s\) mode"),
        ("sqlite:x.db", "lacks the //"),
    ],
)
async def test_bad_urls_name_the_fix(bad: str, message: str) -> None:
    with pytest.raises(LedgerError, match=message):
        await open_ledger(bad)


async def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="not a usable landed ledger"):
        await open_ledger(url(path))


async def test_settle_again_after_a_stalled_runner_matches_a_workflow_graded_receipt(
    tmp_path: Path,
) -> None:
    """The receipt as the workflow grades it carries nulls (no act error, say) that the stored
    copy, in its canonical form, does not: a workflow task that ran again after the runner
    stalled past the append must still find its receipt, not fail the task on a conflict."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.exceptions import ApplicationError

    from landed.activities.runner import RunnerActivities
    from landed.task.assemble import assemble_receipt
    from landed.task.messages import ActReport, Routing, SettleInput
    from landed.task.spec import TaskSpec

    spec = TaskSpec.model_validate(
        {"task_id": "stalled", "owner": "agent-a", "outcome": "x", "act": {"name": "a"}}
    )

    def graded(at: datetime, run_id: str = "r") -> Receipt:
        extra = {"pre_read": False, "spec_sha256": "v1:x", "act_error": None, "run_id": run_id}
        draft = assemble_receipt(
            spec, ActReport(claimed_status="done"), [], attempt=1, settled_at=at, extra=extra
        )
        return draft.model_copy(update={"verdict": "planned", "verdict_by": "runner"})

    def as_the_activity_gets_it(r: Receipt) -> SettleInput:
        convert = pydantic_data_converter.payload_converter
        (inp,) = convert.from_payloads(convert.to_payloads([SettleInput(receipt=r)]), [SettleInput])
        assert isinstance(inp, SettleInput)
        return inp

    first = graded(datetime(2026, 11, 30, 9, 53, 11, tzinfo=UTC))
    later = graded(datetime(2026, 11, 30, 9, 56, 16, tzinfo=UTC))
    assert first.landed is not None and "act_error" in first.landed.model_dump()
    routing = Routing(actor_task_queue="a", verifier_task_queue="v", runner="runner")
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        settle = RunnerActivities(ledger, routing).settle
        assert (await settle(as_the_activity_gets_it(first))).appended is True
        again = await settle(as_the_activity_gets_it(later))
        assert again.appended is False and again.stored is not None
        assert again.stored.settled_at == first.settled_at
        assert again.stored is not None and canonical_json(again.stored) == canonical_json(first)
        # The same run graded otherwise on its second try (a cancel arrived meanwhile, say):
        # the first try's receipt is the record, and the task ends with it.
        regraded = later.model_copy(update={"verdict": "failed"})
        kept = await settle(as_the_activity_gets_it(regraded))
        assert kept.stored is not None and canonical_json(kept.stored) == canonical_json(first)
        # Another run of the same task (its spec digest) found this attempt settled first (a
        # lost run's settle committed late): the stored receipt is the record it ends with.
        other = graded(datetime(2026, 11, 30, 10, tzinfo=UTC), run_id="another-run")
        late = await settle(as_the_activity_gets_it(other.model_copy(update={"verdict": "failed"})))
        assert late.stored is not None and canonical_json(late.stored) == canonical_json(first)
        # Another task's receipt under the same id and attempt is a conflict, never retried.
        alien = other.model_copy(
            update={
                "verdict": "failed",
                "landed": other.landed.model_copy(update={"spec_sha256": "v1:other"})
                if other.landed
                else None,
            }
        )
        with pytest.raises(ApplicationError) as err:
            await settle(as_the_activity_gets_it(alien))
        assert err.value.type == "LedgerConflict" and err.value.non_retryable
        assert len(await ledger.get("stalled")) == 1
        # A claim that finds another task's receipt under the id refuses too.
        from landed.task.messages import ClaimInput

        claim = RunnerActivities(ledger, routing).claim
        with pytest.raises(ApplicationError) as err:
            await claim(ClaimInput(task_id="stalled", run_id="r3", attempt=1, spec_sha256="v1:y"))
        assert err.value.type == "TaskIdReused" and err.value.non_retryable
        same = await claim(
            ClaimInput(task_id="stalled", run_id="r3", attempt=1, spec_sha256="v1:x")
        )
        assert same.settled is not None and same.settled.task_id == "stalled"
        # A claim that finds another task's unsettled claim under the id refuses as well: that
        # run may have acted, but for other work, so this task cannot rest on it either way.
        first_claim = await claim(
            ClaimInput(task_id="open", run_id="r1", attempt=1, spec_sha256="v1:x")
        )
        assert first_claim.other_run is None and first_claim.settled is None
        with pytest.raises(ApplicationError) as err:
            await claim(ClaimInput(task_id="open", run_id="r2", attempt=1, spec_sha256="v1:y"))
        assert err.value.type == "TaskIdReused" and err.value.non_retryable
        assert "about to act in run r1" in err.value.message
        same_task = await claim(
            ClaimInput(task_id="open", run_id="r2", attempt=1, spec_sha256="v1:x")
        )
        assert same_task.other_run == "r1"


async def test_settle_after_a_runner_stopped_past_its_append_keeps_the_stored_receipt(
    tmp_path: Path,
) -> None:
    # A runner appended, then stopped before Temporal recorded settle; the workflow task ran
    # again later, so the same receipt was graded at another time. The ledger keeps the first
    # and settle hands back its time; different content is still a conflict, never retried.
    from temporalio.exceptions import ApplicationError

    from landed.activities.runner import RunnerActivities
    from landed.task.messages import Routing, SettleInput

    routing = Routing(actor_task_queue="a", verifier_task_queue="v", runner="runner")
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        settle = RunnerActivities(ledger, routing).settle
        first = receipt("stopped")
        assert (await settle(SettleInput(receipt=first))).appended is True
        later = first.model_copy(update={"settled_at": datetime(2026, 11, 7, 2, tzinfo=UTC)})
        again = await settle(SettleInput(receipt=later))
        assert again.appended is False and again.stored is not None
        assert again.stored.settled_at == first.settled_at
        assert [r.settled_at for r in await ledger.get("stopped")] == [first.settled_at]
        changed = later.model_copy(update={"verdict": "failed"})
        with pytest.raises(ApplicationError) as err:
            await settle(SettleInput(receipt=changed))
        assert err.value.type == "LedgerConflict" and err.value.non_retryable
        assert len(await ledger.get("stopped")) == 1


async def test_group_commit_tries_rows_alone_only_for_an_error_about_a_row() -> None:
    """A store that is down fails the whole batch once; a row the store refuses is found by
    trying each row alone, and only that row's append fails."""
    from landed.ledger.base import GroupCommit, LedgerRow

    class RowError(Exception):
        pass

    calls: list[int] = []

    async def locked(rows: Sequence[LedgerRow]) -> list[bool | str]:
        calls.append(len(rows))
        raise OSError("database is locked")

    down = GroupCommit(locked, row_refused=lambda exc: isinstance(exc, RowError))
    rows = [LedgerRow.of(receipt(t)) for t in ("a", "b", "c")]
    results = await asyncio.gather(*(down.submit([r]) for r in rows), return_exceptions=True)
    assert all(isinstance(r, LedgerError) for r in results), results
    assert calls == [3]  # once for the batch, not once more for every row

    async def refuses_b(rows: Sequence[LedgerRow]) -> list[bool | str]:
        if any(r.task_id == "b" for r in rows):
            raise RowError("b holds a value the column cannot")
        return [True] * len(rows)

    picky = GroupCommit(refuses_b, row_refused=lambda exc: isinstance(exc, RowError))
    results = await asyncio.gather(*(picky.submit([r]) for r in rows), return_exceptions=True)
    assert results[0] == [True] and results[2] == [True], results
    assert isinstance(results[1], LedgerError), results


async def test_a_ledger_whose_no_replace_trigger_aborts_still_reads_a_stored_key(
    tmp_path: Path,
) -> None:
    """Files written by 3d4e067 carry schema 2 with a trigger that aborts instead of dropping:
    a writer brings them to schema 3, and a stored key's append reads as "already there", a
    different one as a conflict."""
    path = tmp_path / "abort.db"
    async with await open_ledger(url(path)) as ledger:
        await ledger.append(receipt("a"))
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER landed_receipts_no_replace")
        db.execute(
            "CREATE TRIGGER landed_receipts_no_replace BEFORE INSERT ON landed_receipts"
            " WHEN EXISTS (SELECT 1 FROM landed_receipts WHERE task_id = NEW.task_id"
            " AND attempt = NEW.attempt) BEGIN SELECT RAISE(ABORT, 'the landed ledger is"
            " append-only: a stored receipt cannot be replaced'); END"
        )
        db.execute("DROP TABLE landed_claims")  # schema 2 had none, nor a chain
        db.execute("DROP TABLE landed_chain_heads")
        db.execute("DROP TABLE landed_events")  # nor events (schema 8)
        db.execute("ALTER TABLE landed_receipts DROP COLUMN chain_pos")
        db.execute("ALTER TABLE landed_receipts DROP COLUMN chain_link")
        db.execute("DELETE FROM landed_schema_version WHERE version > 2")
    db.close()
    async with await open_ledger(url(path)) as ledger:
        assert await ledger.append(receipt("a")) is False
        with pytest.raises(LedgerConflict):
            await ledger.append(receipt("a", verdict="failed"))
        with pytest.raises(LedgerConflict):
            await ledger.append_many([receipt("a", verdict="failed"), receipt("b")])
        assert [r.task_id for r in await ledger.board()] == ["a", "b"]


async def test_two_connections_claiming_one_task_at_once_see_each_other(tmp_path: Path) -> None:
    path = url(tmp_path / "l.db")
    async with await open_ledger(path) as one, await open_ledger(path) as other:
        await check_concurrent_claims(one, other)
        await check_opposite_orders_do_not_deadlock(one, other)


async def test_an_attempt_sqlite_cannot_hold_fails_only_its_own_settle(tmp_path: Path) -> None:
    async with await open_ledger(url(tmp_path / "l.db")) as ledger:
        results = await asyncio.gather(
            *(ledger.append(receipt(f"good-{i}")) for i in range(5)),
            ledger.append(
                receipt("huge").model_copy(update={"landed": LandedExtension(attempt=2**63)})
            ),
            return_exceptions=True,
        )
        assert results[:5] == [True] * 5, results
        assert isinstance(results[5], LedgerError) and "OverflowError" in str(results[5])
        assert await ledger.count() == 5


@pytest.mark.slow
async def test_a_close_that_gives_up_leaves_no_queued_settle_unwritten(tmp_path: Path) -> None:
    """Another process holds the file's write lock while a flush waits on it and more settles
    queue behind; a close() cancelled by its deadline must not cancel that flush, and the next
    close() writes the queued rows before it returns."""
    path = tmp_path / "l.db"
    ledger = await open_ledger(url(path))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    first = [asyncio.ensure_future(ledger.append(receipt(f"a{i}"))) for i in range(3)]
    await asyncio.sleep(0.2)  # a0..a2 are being flushed: waiting for the lock
    queued = [asyncio.ensure_future(ledger.append(receipt(f"b{i}"))) for i in range(3)]
    await asyncio.sleep(0.1)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ledger.close(), 0.5)
    holder.execute("COMMIT")
    holder.close()
    await ledger.close()
    assert await asyncio.wait_for(asyncio.gather(*first, *queued), 15) == [True] * 6
    with sqlite3.connect(path) as db:
        stored = {r for (r,) in db.execute("SELECT task_id FROM landed_receipts")}
    db.close()
    assert stored == {"a0", "a1", "a2", "b0", "b1", "b2"}
