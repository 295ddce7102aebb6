"""AgentTask on the real dev server: verdicts, DOD-10 reconciliation, retries, queries, replay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from landed.workflows.agent_task import AgentTask
from landed_env import Roles, run_roles
from landed_sor import Site, act_runs, make_rows_db, row_count
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import landed
from landed._grading import grade
from landed._plugin import landed_plugin
from landed._signing import TrustStore

HISTORIES = Path(__file__).parent / "histories"


def rows_task(task_id: str, db: Path, *, expect: int, batch: str, **act: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "owner": "agent-a",
        "outcome": f"{expect} rows of batch {batch} are in the rows table",
        "target": "rows-db: table rows",
        "act": {"name": "test.rows", "input": {"batch": batch, **act}},
        "proof_plan": [
            {
                "action": f"insert {expect} rows",
                "probe": {
                    "kind": "record",
                    "source": "rows-db",
                    "query": "select count(*) from rows where batch = ?",
                    "params": [batch],
                },
                "expect": {"type": "count", "value": expect},
            }
        ],
        "retry": {"verify_backoff": 0.2},
        "timeouts": {"act_heartbeat": 2, "verify_heartbeat": 2},
    }


def publish_task(task_id: str, slug: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "owner": "agent-b",
        "outcome": f"one post {slug} is on the site",
        "target": "site: /posts",
        "act": {"name": "test.publish", "input": {"slug": slug}},
        "proof_plan": [
            {
                "action": "publish one post",
                "probe": {"kind": "http", "source": "site", "url": f"/posts/count?slug={slug}"},
                "expect": {"type": "count", "value": 1},
            }
        ],
        "retry": {"verify_backoff": 0.2},
        "timeouts": {"act_heartbeat": 2, "verify_heartbeat": 2},
    }


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


@pytest.fixture
def site() -> Any:
    s = Site().start()
    yield s
    s.stop()


def _roles(temporal_dev: str, tmp_path: Path, db: Path, site: Site) -> Any:
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}", "site": site.url},
        sources={"rows-db": {"url": f"sqlite:///{db}"}, "site": {"url": site.url}},
    )


def _read_back(receipt: landed.Receipt) -> list[landed.ProofItem]:
    return [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]


async def _verdicts_match_checker(roles: Roles, receipt: landed.Receipt) -> None:
    """The verdict the workflow stored is what the checker's grade() says offline."""
    trust = TrustStore.load([roles.public_key])
    offline = grade(receipt, signature_ok=trust.signature_ok)
    assert receipt.verdict == offline.proven_status.value
    assert receipt.landed is not None and receipt.landed.rung == receipt.verdict


async def test_rows_that_land_are_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(rows_task("land-1", db, expect=5, batch="b1", write=5))
        assert receipt.verdict == "verified"
        assert receipt.landed is not None and receipt.landed.proof_level == "P3"
        (proof,) = _read_back(receipt)
        assert proof.result == "pass"
        assert proof.checked_by == roles.identities["verifier"]  # not the actor (DOD-2)
        assert receipt.verdict_by == roles.identities["runner"]
        assert proof.landed is not None and "signature" in proof.landed
        await _verdicts_match_checker(roles, receipt)
        ledger = await roles.ledger()
        try:
            stored = await ledger.get("land-1")
        finally:
            await ledger.close()
        assert [r.verdict for r in stored] == ["verified"]
        assert row_count(db, "b1") == 5


async def test_scenarios_not_done(temporal_dev: str, tmp_path: Path, db: Path, site: Site) -> None:
    make_rows_db(db, preexisting=45, batch="vac")
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        # One at a time: with max_cached_workflows=0 the SDK's core stalls concurrent runs that
        # use local activities (sdk-rust#886, #1482); the workflows run in parallel elsewhere.
        swallowed = await roles.client.run(rows_task("swallow", db, expect=45, batch="s"))
        half = await roles.client.run(rows_task("half", db, expect=45, batch="h", write=22))
        vacuous = await roles.client.run(rows_task("vacuous", db, expect=45, batch="vac"))
        blocked = await roles.client.run(
            rows_task(
                "blocked",
                db,
                expect=3,
                batch="bl",
                write=3,
                report="Could not finish: blocked on the reviewer's sign-off.",
            )
        )
    assert _read_back(swallowed)[0].result == "empty"
    assert _read_back(half)[0].result == "mismatch"
    assert _read_back(vacuous)[0].result == "vacuous"
    assert _read_back(blocked)[0].result == "pass"
    for receipt in (swallowed, half, vacuous, blocked):
        assert receipt.verdict not in ("verified", "reconciled"), receipt.task_id
        await _verdicts_match_checker(roles, receipt)
    assert any(f.startswith("DOD-7") for f in blocked.landed.findings)  # type: ignore[union-attr]
    # A mismatch settles; it is never retried: one act run, one read after it.
    assert act_runs(db, "half") == [(1, "half")]


async def test_publish_saves_then_errors_reconciles_one_copy(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The DoD's seed case (DOD-10): the API saves the post, then answers 500. The workflow
    reads back before any retry, finds the post, and settles without publishing again."""
    site.save_then_fail = 1
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(publish_task("pub-1", "pricing"))
    assert site.count("pricing") == 1
    assert site.publishes == 1
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.act_error  # type: ignore[attr-defined]
    await _verdicts_match_checker(roles, receipt)


async def test_failed_write_that_did_not_land_reruns_with_same_key(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(
            rows_task("rerun", db, expect=4, batch="r", write=4, fail="before", fail_attempts=1)
        )
    assert act_runs(db, "rerun") == [(1, "rerun"), (2, "rerun")]  # same idempotency key
    assert row_count(db, "r") == 4
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.attempt == 2


async def test_probe_error_rereads_then_passes_and_persistent_error_is_not_done(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        site.count_unavailable = 2  # the pre-read errors once, the first after-read once
        ok = await roles.client.run(publish_task("flaky", "flaky"))
        assert ok.verdict == "verified"
        reads_before = site.count_reads
        site.count_unavailable = 100
        down = await roles.client.run(publish_task("down", "down"))
    assert ok.verdict == "verified"
    assert down.verdict != "verified"
    assert _read_back(down)[0].result == "probe-error"
    # Bounded: verify_attempts (3) reads before and 3 after, then it settles.
    assert site.count_reads - reads_before == 6


async def test_same_task_id_twice_acts_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("twice", db, expect=2, batch="t", write=2)
        first = await roles.client.start(task)
        second = await roles.client.start(task)  # while running: attaches
        assert not first.existing
        assert (await first.result()).verdict == "verified"
        third = await roles.client.start(task)  # after it closed: rejected, then attached
        assert third.existing
        assert (await third.result()).verdict == "verified"
        await second.result()
    assert act_runs(db, "twice") == [(1, "twice")]
    assert row_count(db, "t") == 2


async def test_queries_and_search_attributes(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    gate = tmp_path / "go"
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        handle = await roles.client.start(
            rows_task("query-1", db, expect=1, batch="q", write=1, wait_for_file=str(gate))
        )
        for _ in range(200):
            progress = await handle.progress()
            if progress.step == "act":
                break
            await asyncio.sleep(0.05)
        assert progress.step == "act" and progress.rung == "planned"
        so_far = await roles.client.receipt("query-1")
        assert so_far.verdict is None and so_far.task_id == "query-1"
        status = await roles.client.status("query-1")
        assert status.execution == "RUNNING" and not status.settled
        gate.touch()
        receipt = await handle.result()
        assert receipt.verdict == "verified"
        status = await roles.client.status("query-1")
        assert status.settled and status.verdict == "verified"
        # Visibility is eventually consistent: poll the list query briefly.
        query = 'LandedVerdict="verified" and LandedOwner="agent-a" and WorkflowId="query-1"'
        found: list[str] = []
        for _ in range(100):
            found = [w.id async for w in roles.temporal.list_workflows(query)]
            if found:
                break
            await asyncio.sleep(0.1)
        assert found == ["query-1"]


async def test_invalid_spec_rejected_and_no_probe_never_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        with pytest.raises(landed.TaskSpecError, match="owner"):
            await roles.client.start({"task_id": "bad", "outcome": "x", "act": {"name": "x"}})
        task = rows_task("no-probe", db, expect=1, batch="np", write=1)
        task["proof_plan"] = []
        handle = await roles.client.start(task)
        assert any("can never reach verified" in w for w in handle.warnings)
        receipt = await handle.result()
        # No read-back to reconcile with: a failed write is never run again (it may have landed).
        blind = rows_task("no-probe-fail", db, expect=1, batch="npf", fail="after", fail_attempts=9)
        blind["proof_plan"] = []
        blind_receipt = await roles.client.run(blind)
        unknown = await roles.client.run(
            {**rows_task("unknown-act", db, expect=1, batch="u"), "act": {"name": "nope"}}
        )
    assert receipt.verdict != "verified" and row_count(db, "np") == 1
    assert blind_receipt.verdict == "failed"
    assert act_runs(db, "no-probe-fail") == [(1, "no-probe-fail")]
    assert unknown.verdict == "failed"
    assert "UnknownAct" in (unknown.report or "") or "no act named" in (unknown.report or "")


async def test_replay_recorded_histories(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Histories recorded now replay with the current workflow code (and so does the
    committed one): a change that breaks determinism fails here."""
    site.save_then_fail = 1
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        await roles.client.run(rows_task("replay-ok", db, expect=2, batch="rp", write=2))
        await roles.client.run(publish_task("replay-dod10", "rp"))
        await roles.client.run(
            rows_task(
                "replay-rerun", db, expect=1, batch="rr", write=1, fail="before", fail_attempts=1
            )
        )
        histories = [
            await roles.temporal.get_workflow_handle(wid).fetch_history()
            for wid in ("replay-ok", "replay-dod10", "replay-rerun")
        ]
    committed = sorted(HISTORIES.glob("*.json"))
    assert committed, "tests/histories/ holds at least one recorded AgentTask history"
    for path in committed:
        histories.append(WorkflowHistory.from_json(path.stem, json.loads(path.read_text())))
    replayer = Replayer(workflows=[AgentTask], plugins=[landed_plugin()])
    for history in histories:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (history.workflow_id, result.replay_failure)
