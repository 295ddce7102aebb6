"""AgentTask's time cap (GOV-4): reads that keep erroring, a verifier nobody runs, attempts and a
ledger that refuses or hangs all end by the cap, and the task still settles."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from helpers.agent_task import agent_roles, read_back
from helpers.roles import Roles, run_roles
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task

from landed.signing import TrustStore


async def test_a_probe_that_keeps_erroring_is_not_read_again_past_the_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """GOV-4: the wait before reading a probe-error again (12 s here) would end past the
    3 s cap; the task settles by the cap with the reading not observed, not after the wait."""
    site.count_unavailable = 100
    task = publish_task("backoff-cap", "bc")
    task["time_cap"] = 3
    task["retry"] = {"verify_backoff": 12, "verify_attempts": 2}
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        began = time.monotonic()
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        took = time.monotonic() - began
    assert took < 10, took
    assert receipt.verdict not in ("verified", "reconciled")
    assert all(p.result == "probe-error" for p in read_back(receipt))


def _without_a_verifier(temporal_dev: str, tmp_path: Path, db: Path) -> Any:
    """The roles, with the runner reading from a verifier queue nobody polls."""
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        runner={"verifier_task_queue": f"nobody-{uuid.uuid4().hex[:8]}"},
        check_roles=False,
    )


async def test_reads_wait_for_a_verifier_one_read_past_the_cap_in_all(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """No verifier polls: the pre-read waits until the cap plus one read's time; the read-back
    after it gets what is left of that, not another read's time of its own."""
    async with _without_a_verifier(temporal_dev, tmp_path, db) as roles:
        task = {
            **rows_task("no-verifier-cap", db, expect=1, batch="nvc", write=1),
            "time_cap": 2,
            "timeouts": {"verify": 6},
        }
        began = time.monotonic()
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        took = time.monotonic() - began
    assert 7 < took < 12, took  # 2 + 6 (+1 for the read-back), not 2 + 6 + 6
    assert receipt.verdict not in ("verified", "reconciled")
    assert act_runs(db, "no-verifier-cap") == []  # the cap came before the act


async def test_a_verifier_nobody_runs_settles_not_done_by_the_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """No worker polls the verifier queue: the reads wait until the time cap plus one read's
    time, then count as not observed, and the task settles not done instead of hanging."""
    async with _without_a_verifier(temporal_dev, tmp_path, db) as roles:
        task = {
            **rows_task("no-verifier", db, expect=2, batch="nv", write=2),
            "time_cap": 2,
            "timeouts": {"verify": 1},
        }
        receipt = await asyncio.wait_for(roles.client.run(task), timeout=60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("no-verifier")
    (proof,) = read_back(receipt)
    assert proof.result == "probe-error"
    observation = str((proof.landed or {}).get("observation"))
    assert "verify failed" in observation
    assert "no verifier answered on task queue 'nobody-" in observation, observation
    assert "landed worker verifier" in observation
    assert receipt.verdict != "verified"
    assert [r.verdict for r in stored] == [receipt.verdict]  # settled, once


async def test_an_attempt_the_time_cap_stops_is_not_counted(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The first attempt fails before writing and uses up the time cap: no second attempt
    starts, so the receipt (and the ledger) name attempt 1, the one its readings were signed
    for."""
    make_rows_db(db)
    task = rows_task(
        "cap-attempt",
        db,
        expect=3,
        batch="ca",
        write=3,
        fail="before",
        fail_attempts=1,
        sleep_before_s=2.6,
    )
    task["time_cap"] = 3
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cap-attempt")
    assert act_runs(db, "cap-attempt") == [(1, "cap-attempt")]
    assert receipt.landed is not None and receipt.landed.attempt == 1, receipt.landed
    assert [r.landed.attempt for r in stored if r.landed] == [1]
    assert receipt.verdict != "verified"


async def test_a_task_the_cap_stops_before_its_act_keeps_signatures_that_verify(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """A slow system of record: the pre-read uses up the time cap, so no act attempt starts.
    The read-back is still signed for the attempt the receipt names, so the receipt checks out
    offline instead of looking changed after signing."""
    site.count_delay_s = 2.5
    task = publish_task("cap-before-act", "cba")
    task["time_cap"] = 3
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
        trust = TrustStore.load([roles.public_key])
    assert site.count("cba") == 0  # the act never ran
    assert receipt.landed is not None and receipt.landed.attempt == 1, receipt.landed
    signed = [p for p in read_back(receipt) if p.landed and "signature" in p.landed]
    assert signed, receipt.proof
    assert all(trust.signature_ok(receipt, p) for p in signed), signed
    assert receipt.verdict != "verified"


def _refuse_claims(ledger_url: str) -> None:
    """The ledger file starts refusing every new claim with an error (what a full disk or a
    broken ledger answers), through a trigger of its own; receipts are still taken."""
    path = ledger_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TRIGGER refuse_claims BEFORE INSERT ON landed_claims "
            "BEGIN SELECT RAISE(ABORT, 'the ledger refuses claims'); END"
        )


async def _unsettled_by_a_5s_cap(roles: Roles, db: Path, task_id: str, batch: str) -> float:
    """Run a one-row task without a pre-read and a 5 s cap that must end unsettled; the
    seconds it took."""
    task = rows_task(task_id, db, expect=1, batch=batch, write=1)
    task["pre_read"] = False
    task["time_cap"] = 5
    started = time.monotonic()
    # Since the fleet gate (GOV-4) runs between the plan and the first act, the plan claims
    # nothing and the claim step after the gate is the one the ledger refuses: the attempts end
    # there and the task settles not done (nothing acted), by its cap as before.
    receipt = await asyncio.wait_for(roles.client.run(task), 60)
    assert receipt.verdict != "verified", receipt.landed
    return time.monotonic() - started


async def test_a_ledger_that_keeps_refusing_the_plan_fails_the_task_by_its_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """No act starts unclaimed, and a ledger answering with errors does not hold the task at
    its plan for good: by its time cap the task closes unsettled, with nothing acted."""
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        _refuse_claims(roles.ledger_url)
        took = await _unsettled_by_a_5s_cap(roles, db, "plan-refused", "pr")
        async with await roles.ledger() as ledger:
            stored = await ledger.get("plan-refused")
    assert act_runs(db, "plan-refused") == []
    assert row_count(db, "pr") == 0
    assert [r.verdict for r in stored] in ([], ["failed"]), stored
    # The waits get half the 5 s cap (one wait of 1 s; a second of 2 s would not fit): two
    # tries, each cut at 1.25 s.
    assert took < 20, took


async def test_a_ledger_that_hangs_fails_the_task_by_its_time_cap_not_after_it(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Another process holds the ledger's write lock, so each claim waits out SQLite's busy
    timeout (10 s): the plan's tries are cut so that all of them end within the 5 s cap."""
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        holder = sqlite3.connect(roles.ledger_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        task = rows_task("plan-hangs", db, expect=1, batch="ph", write=1)
        task["pre_read"] = False
        task["time_cap"] = 5
        try:
            handle = await roles.client.start(task)
            # Past the 5 s cap, with the ledger still locked: the claim's tries ended, no act.
            await asyncio.sleep(9)
            assert act_runs(db, "plan-hangs") == []
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # Since the fleet gate (GOV-4), the claim step (not the plan) is the one that hangs;
        # the settle waits for the ledger (nothing settled is lost) and the task is not done.
        receipt = await asyncio.wait_for(handle.result(), 60)
    assert act_runs(db, "plan-hangs") == []
    assert receipt.verdict != "verified", receipt.landed


async def test_a_claim_the_ledger_keeps_refusing_ends_the_attempts_and_settles_not_done(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The claim step before the act (after a pre-read) cannot be recorded: no act runs, the
    attempts end by the time cap, and the task is read back and settled as not done, saying
    why."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        _refuse_claims(roles.ledger_url)
        task = rows_task("claim-refused", db, expect=1, batch="cr", write=1)
        task["time_cap"] = 5
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("claim-refused")
    assert act_runs(db, "claim-refused") == []
    assert receipt.verdict != "verified"
    assert receipt.landed is not None
    assert "claim could not be recorded" in (receipt.landed.act_error or ""), receipt.landed
    assert [r.verdict for r in stored] == [receipt.verdict]
