"""AgentTask on the real dev server: the verdict a task earns, checked again by `landed check`
from the ledger's copy; a plan step that disagrees, a missing probe or a refused one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.agent_task import agent_roles, read_back, verdicts_match_checker
from helpers.roles import run_roles
from helpers.sor import Site, act_runs, make_rows_db, row_count, rows_task

import landed
from landed.task.names import VERIFY_ACTIVITY


async def test_rows_that_land_are_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(rows_task("land-1", db, expect=5, batch="b1", write=5))
        assert receipt.verdict == "verified"
        assert receipt.landed is not None and receipt.landed.proof_level == "P3"
        (proof,) = read_back(receipt)
        assert proof.result == "pass"
        assert proof.checked_by == roles.identities["verifier"]  # not the actor (DOD-2)
        assert receipt.verdict_by == roles.identities["runner"]
        assert proof.landed is not None and "signature" in proof.landed
        await verdicts_match_checker(roles, receipt)
        ledger = await roles.ledger()
        try:
            stored = await ledger.get("land-1")
        finally:
            await ledger.close()
        assert [r.verdict for r in stored] == ["verified"]
        assert row_count(db, "b1") == 5


async def test_scenarios_not_done(temporal_dev: str, tmp_path: Path, db: Path, site: Site) -> None:
    make_rows_db(db, preexisting=45, batch="vac")
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
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
    assert read_back(swallowed)[0].result == "empty"
    assert read_back(half)[0].result == "mismatch"
    assert read_back(vacuous)[0].result == "vacuous"
    assert read_back(blocked)[0].result == "pass"
    for receipt in (swallowed, half, vacuous, blocked):
        assert receipt.verdict not in ("verified", "reconciled"), receipt.task_id
        await verdicts_match_checker(roles, receipt)
    assert any(f.startswith("DOD-7") for f in blocked.landed.findings)  # type: ignore[union-attr]
    # A mismatch settles; it is never retried: one act run, one read after it.
    assert act_runs(db, "half") == [(1, "half")]


async def test_invalid_spec_rejected_and_no_probe_never_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        with pytest.raises(landed.TaskSpecError, match="owner"):
            await roles.client.start({"task_id": "bad", "outcome": "x", "act": {"name": "x"}})
        task = rows_task("no-probe", db, expect=1, batch="np", write=1)
        task["proof_plan"] = []
        handle = await roles.client.start(task)
        assert any("can never reach verified" in w for w in handle.warnings)
        receipt = await handle.result()
        history = await roles.temporal.get_workflow_handle("no-probe").fetch_history()
        scheduled = [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]
        # No read-back to reconcile with: a failed write is never run again (it may have landed).
        blind = rows_task("no-probe-fail", db, expect=1, batch="npf", fail="after", fail_attempts=9)
        blind["proof_plan"] = []
        blind_receipt = await roles.client.run(blind)
        # An act the actor does not know: refused before it starts; started anyway, blocked.
        nope = {**rows_task("unknown-act", db, expect=1, batch="u"), "act": {"name": "nope"}}
        with pytest.raises(landed.TaskRefused, match="no act named 'nope'"):
            await roles.client.start(nope)
        unchecked = landed.Client(
            roles.temporal, task_queue=roles.queues["runner"], check_roles=False
        )
        unknown = await unchecked.run(nope)
    assert receipt.verdict != "verified" and row_count(db, "np") == 1
    # Nothing to read back: no verify step is asked for (none would wait on a verifier).
    # (the runner's fleet gate, GOV-4, is read before the act)
    assert scheduled == ["landed.fleet_gate", "landed.act"], scheduled
    assert blind_receipt.verdict == "failed"
    assert act_runs(db, "no-probe-fail") == [(1, "no-probe-fail")]
    assert unknown.verdict == "blocked"
    assert "no act named 'nope'" in (unknown.report or "")


def _record_step(action: str, query: str, params: list[Any], expect: int) -> dict[str, Any]:
    return {
        "action": action,
        "probe": {"kind": "record", "source": "rows-db", "query": query, "params": params},
        "expect": {"type": "count", "value": expect},
    }


async def test_every_plan_step_must_pass_for_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Two contracts: one duplicated (46 rows for a claim of 45), one that passes. The passing
    step alone must not make the task verified; the same plan with both passing does."""
    log_step = _record_step(
        "log the act", "select count(*) from act_log where task = ?", ["two-dup"], 1
    )
    dup = rows_task("two-dup", db, expect=45, batch="d", write=46)
    dup["proof_plan"].append(log_step)
    both = rows_task("two-ok", db, expect=3, batch="o", write=3)
    both["proof_plan"].append({**log_step, "probe": {**log_step["probe"], "params": ["two-ok"]}})
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        capped = await roles.client.run(dup)
        ok = await roles.client.run(both)
    assert [p.result for p in read_back(capped)] == ["duplicated", "pass"]
    assert capped.verdict not in ("verified", "reconciled")
    assert capped.landed is not None
    assert capped.landed.meets_bar is False  # type: ignore[attr-defined]
    assert any("plan step #1" in f and "duplicated" in f for f in capped.landed.findings)  # type: ignore[attr-defined]
    # The checker reaches the same verdict from the receipt alone: a read-back that disagreed
    # leaves the passing one proving only part of the outcome.
    task = await verdicts_match_checker(roles, capped)
    assert task["proof_level"] == "P2"
    assert task["meets_bar"] is False
    assert [p.result for p in read_back(ok)] == ["pass", "pass"]
    assert ok.verdict == "verified"
    await verdicts_match_checker(roles, ok)


async def test_the_task_cannot_switch_off_the_pre_read(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """pre_read is the runner operator's setting: a task's pre_read: false is ignored unless the
    runner allows tasks to skip it, so rows that were already there stay vacuous."""
    make_rows_db(db, preexisting=45, batch="pre")
    task = {**rows_task("no-pre", db, expect=45, batch="pre"), "pre_read": False}
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert read_back(receipt)[0].result == "vacuous"
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and receipt.landed.pre_read is True  # type: ignore[attr-defined]
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        runner={"task_may_skip_pre_read": True},
    ) as allowed:
        skipped = await allowed.client.run({**task, "task_id": "no-pre-allowed"})
    assert skipped.landed is not None and skipped.landed.pre_read is False  # type: ignore[attr-defined]


async def test_task_probes_the_verifier_config_does_not_allow_are_refused_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """C1: a task's command probe reading the verifier's key or its parent's environment, and an
    absolute URL with no source, never run in the verifier; a refusal is not re-read."""
    ran = tmp_path / "ran"
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        private = roles.public_key.with_suffix(".key")
        task = rows_task("refused", db, expect=2, batch="rf", write=2)
        task["retry"] = {"verify_backoff": 2.0, "verify_attempts": 3}
        task["proof_plan"] = [
            {
                "action": "read the key",
                "probe": {"kind": "command", "argv": ["sh", "-c", f"touch {ran}; cat {private}"]},
                "expect": {"type": "non_empty"},
            },
            {
                "action": "read the parent's environment",
                "probe": {
                    "kind": "command",
                    "argv": [f"touch {ran}; tr '\\0' '\\n' < /proc/$PPID/environ | rev"],
                    "shell": True,
                },
                "expect": {"type": "non_empty"},
            },
            {
                "action": "read a page the actor controls",
                "probe": {"kind": "http", "url": f"{site.url}/posts?slug=x"},
                "expect": {"type": "non_empty"},
            },
        ]
        # Asked before the start, the verifier refuses all three; nothing starts.
        with pytest.raises(landed.TaskRefused) as refused:
            await roles.client.start(task)
        unchecked = landed.Client(
            roles.temporal, task_queue=roles.queues["runner"], check_roles=False
        )
        receipt = await unchecked.run(task)
        history = await roles.temporal.get_workflow_handle("refused").fetch_history()
    assert not ran.exists(), "the verifier ran a command the task supplied"
    assert str(refused.value).count(": refused: ") == 3, refused.value
    # Started anyway: the pre-read is refused, so the task settles blocked and never acts.
    assert receipt.verdict == "blocked" and act_runs(db, "refused") == []
    first = receipt.landed.findings[0] if receipt.landed else ""
    for step in (1, 2, 3):
        assert f"plan step {step}: refused: " in first, first
    pem = "".join(line for line in private.read_text().splitlines() if "-----" not in line)
    assert pem not in receipt.model_dump_json() and pem not in str(refused.value)
    verify_calls = [
        e
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == VERIFY_ACTIVITY
    ]
    assert len(verify_calls) == 1  # the pre-read, never re-read, and no read-back after it
