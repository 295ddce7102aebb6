"""The rollout gate's rule: a canary proves a build only when every fact holds, each one
found in the ledger or in Temporal's history, and a fact not found is a reason."""

from __future__ import annotations

import pytest

from landed.task.canary import CanaryFacts, CanaryInput, canary_task, judge
from landed.task.spec import TaskSpec

GOOD = CanaryFacts(
    task_id="landed-canary-1",
    verdict="verified",
    key_id="8b43f2c37f3dff38",
    key_trusted=True,
    verifier_builds=["B"],
    runner_builds=["B"],
)


def test_a_verified_signed_canary_on_the_build_passes() -> None:
    assert judge(GOOD, "B") == []
    # An operator who names the verifier's build: the runner is still held to its own.
    other = GOOD.model_copy(update={"verifier_builds": ["V"]})
    assert judge(other, "B", "V") == []
    assert judge(GOOD, "B", "V") == ["the canary's verifier steps ran on B, not build V"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"verdict": "failed"}, "settled failed, not verified"),
        ({"verdict": None}, "settled nothing"),
        ({"key_trusted": False}, "not signed by a trusted verifier key"),
        ({"key_id": None}, "not signed by a trusted verifier key (no key)"),
        ({"chain_findings": ["row 7 was edited"]}, "chain does not hold: row 7 was edited"),
        ({"verifier_builds": ["A"]}, "verifier steps ran on A, not build B"),
        ({"verifier_builds": ["A", "B"]}, "verifier steps ran on A, B, not build B"),
        ({"verifier_builds": []}, "verifier steps ran on no build, not build B"),
        ({"runner_builds": [""]}, "runner steps ran on an unversioned worker, not build B"),
        ({"runner_builds": ["A", "B"]}, "runner steps ran on A, B"),
    ],
)
def test_each_missing_fact_fails_the_gate(change: dict[str, object], reason: str) -> None:
    found = judge(GOOD.model_copy(update=change), "B")
    assert any(reason in f for f in found), found


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_the_built_in_canary_is_a_task_with_a_read_back(dialect: str) -> None:
    inp = CanaryInput(
        source="canary-db", credential="canary-db", table="ops.canary", dialect=dialect
    )  # type: ignore[arg-type]
    spec = TaskSpec.model_validate(canary_task(inp, "B:run-1", "landed-canary-x"))
    assert spec.act is not None and spec.act.name == "sql.execute"
    assert [c.probe.kind for c in spec.proof_plan] == ["record"]
    # The marker is a parameter, never text of the statement.
    assert "B:run-1" not in str(spec.act.input["statement"])


def test_an_operator_canary_keeps_the_gates_task_id() -> None:
    inp = CanaryInput(
        source="s", credential="c", table="t", task={"task_id": "mine", "owner": "ops", "x": 1}
    )
    assert canary_task(inp, "m", "landed-canary-x")["task_id"] == "landed-canary-x"


def test_the_table_must_be_an_identifier() -> None:
    for bad in ("t; drop table ledger", "t where 1=1", "", "a.b.c"):
        with pytest.raises(ValueError, match="table"):
            CanaryInput(source="s", credential="c", table=bad)
