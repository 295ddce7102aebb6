"""The meaning a plan is judged under: stamped at submit, carried on the receipt, and kept for
plans and receipts from before it was marked."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from landed.probes.contract import Observation, Outcome, probe_digest
from landed.probes.expect import label_for
from landed.receipts.grading import grade
from landed.signing import TrustStore
from landed.task.assemble import assemble_receipt, proof_item
from landed.task.messages import ActReport, VerifyReading, spec_digest
from landed.task.readings import ReadScope, of_step
from landed.task.spec import TaskSpec, TaskSpecError
from landed.task.validate import check_spec

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def plan(**extra: Any) -> dict[str, Any]:
    return {
        "task_id": "t-meaning",
        "owner": "agent-a",
        "outcome": "45 order lines exist",
        "act": {"name": "test.rows", "input": {}},
        "proof_plan": [
            {
                "action": "insert 45 order lines",
                "probe": {"kind": "record", "source": "orders-db", "query": "select count(*)"},
                "expect": {"type": "count", "value": 45},
            }
        ],
        **extra,
    }


def observed(task: TaskSpec, outcome: Outcome, value: int, before: int | None) -> Observation:
    contract = task.proof_plan[0]
    return Observation(
        outcome=outcome,
        expectation=label_for(contract.probe, contract.expect),
        kind=contract.probe.kind,
        observer="verifier-1",
        observed_at=AT,
        duration_ms=1.0,
        value=value,
        before_value=before,
        probe_sha256=probe_digest(contract.probe),
    )


def test_a_submitted_plan_is_stamped_with_the_current_meaning_and_stays_the_same_task() -> None:
    stored = TaskSpec.model_validate(plan())
    assert stored.expect_meaning is None and stored.meaning == 1  # from before meanings
    sent = check_spec(plan()).spec
    assert sent.expect_meaning == 2 and sent.meaning == 2
    assert spec_digest(sent) == spec_digest(stored)
    with pytest.raises(TaskSpecError, match='"type": "change"'):
        check_spec(plan(expect_meaning=1))


def test_a_run_from_before_meanings_keeps_judging_its_counts_by_the_change() -> None:
    """20 rows before, 65 after: a verifier of meaning 1 judged count(45) a pass. The runner
    holds the reading to the plan's own meaning, so an old run replays as it ran, and a new
    run does not take the old judgement."""
    legacy = TaskSpec.model_validate(plan())
    current = check_spec(plan()).spec
    for task, holds in ((legacy, True), (current, False)):
        before = observed(task, Outcome.MISMATCH, 20, None)
        obs = observed(task, Outcome.PASS, 65, 20)
        got = VerifyReading(
            index=0, observation=obs, proof=proof_item(task.proof_plan[0], obs, checked_by="v")
        )
        scope = ReadScope(
            spec=task, runner="runner-1", trusted=TrustStore(), run_id="r", asked_at=AT
        )
        held = of_step(scope, got, before, 1)
        assert (held is got) is holds, held.observation.message


def test_receipts_say_their_meaning_and_old_ones_grade_as_they_did() -> None:
    legacy = TaskSpec.model_validate(plan())
    current = check_spec(plan()).spec
    graded = []
    for task in (legacy, current):
        obs = observed(task, Outcome.PASS, 65 if task is legacy else 45, 20)
        proof = proof_item(task.proof_plan[0], obs, checked_by="verifier-1")
        receipt = assemble_receipt(
            task, ActReport(claimed_status="done", actor="actor-1"), [proof], attempt=1
        )
        graded.append((receipt, grade(receipt)))
    (old, old_grade), (new, new_grade) = graded
    assert "expect_meaning" not in (old.landed.model_dump() if old.landed else {})
    assert new.landed is not None and new.landed.model_dump()["expect_meaning"] == 2
    assert old_grade.proven_status == new_grade.proven_status
    assert old_grade.proof_level == new_grade.proof_level
