"""Which reading proves which plan step (landed.task.readings): plain functions, no Temporal."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest

from landed.probes.contract import Evidence, Observation, Outcome, probe_digest
from landed.probes.expect import label_for
from landed.signing import KeyPair, TrustStore, sign_proof
from landed.task.assemble import proof_item
from landed.task.messages import VerifyReading
from landed.task.readings import (
    ReadScope,
    answers_request,
    independent,
    nothing_landed,
    of_step,
    still_to_read,
    unobserved,
)
from landed.task.spec import TaskSpec

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
KEY = KeyPair.generate()


def spec(steps: int = 1) -> TaskSpec:
    step = {
        "action": "insert 2 rows",
        "probe": {
            "kind": "record",
            "source": "rows-db",
            "query": "select count(*) from rows where batch = ?",
            "params": ["b"],
        },
        "expect": {"type": "count", "value": 2},
    }
    return TaskSpec.model_validate(
        {
            "task_id": "t-1",
            "owner": "agent-a",
            "outcome": "2 rows of batch b are in the rows table",
            "act": {"name": "test.rows", "input": {}},
            "proof_plan": [step] * steps,
        }
    )


def scope(task: TaskSpec | None = None, keys: tuple[KeyPair, ...] = (KEY,)) -> ReadScope:
    return ReadScope(
        spec=task or spec(),
        runner="runner-1",
        trusted=TrustStore(k.public_key for k in keys),
        run_id="run-a",
        asked_at=AT,
    )


def observed(
    task: TaskSpec, outcome: Outcome = Outcome.PASS, value: Any = 2, **fields: Any
) -> Observation:
    contract = task.proof_plan[0]
    base: dict[str, Any] = {
        "outcome": outcome,
        "expectation": label_for(contract.probe, contract.expect),
        "kind": contract.probe.kind,
        "observer": "verifier-1",
        "observed_at": AT,
        "duration_ms": 1.0,
        "value": value,
        "probe_sha256": probe_digest(contract.probe),
        "evidence": Evidence(
            text=str(value), total_bytes=1, sha256=hashlib.sha256(str(value).encode()).hexdigest()
        ),
    }
    return Observation(**{**base, **fields})


def reading(
    task: TaskSpec,
    obs: Observation,
    *,
    index: int = 0,
    signed: str | None = None,
    checked_by: str = "verifier-1",
    request: str = "",
) -> VerifyReading:
    proof = proof_item(task.proof_plan[index], obs, checked_by=checked_by)
    if signed is not None:
        proof = sign_proof(
            KEY,
            task_id=task.task_id,
            attempt=1,
            proof=proof,
            observation=obs,
            phase=signed,
            run_id="run-a",
            request=request,
        )
    return VerifyReading(index=index, observation=obs, proof=proof)


def test_a_reading_of_its_step_counts_as_it_is() -> None:
    task = spec()
    got = reading(task, observed(task))
    assert of_step(scope(task), got, None, 1) is got


def test_a_reading_of_another_probe_or_expectation_is_not_observed() -> None:
    task = spec()
    other_probe = reading(task, observed(task, probe_sha256="0" * 64))
    easier = reading(task, observed(task, expectation="non_empty (weak default)"))
    for bad, words in ((other_probe, "another probe was run"), (easier, "not plan step #1's")):
        held = of_step(scope(task), bad, None, 1)
        assert held.observation.outcome == Outcome.PROBE_ERROR
        assert words in held.observation.message
        assert held.proof.checked_by == "runner-1" and held.observation.observed_at == AT


def test_a_phase_reading_must_carry_a_trusted_signature_for_that_phase() -> None:
    task = spec()
    obs = observed(task)
    assert of_step(scope(task), reading(task, obs, signed="before"), None, 1, signed_as="before")
    unsigned = of_step(scope(task), reading(task, obs), None, 1, signed_as="before")
    assert "is not a trusted verifier's" in unsigned.observation.message
    wrong_phase = of_step(
        scope(task), reading(task, obs, signed="after"), None, 1, signed_as="before"
    )
    assert wrong_phase.observation.outcome == Outcome.PROBE_ERROR
    untrusted = of_step(
        scope(task, keys=(KeyPair.generate(),)),
        reading(task, obs, signed="before"),
        None,
        1,
        signed_as="before",
    )
    assert untrusted.observation.outcome == Outcome.PROBE_ERROR


def test_a_reading_beside_another_signed_observation_is_not_observed() -> None:
    task = spec()
    signed = reading(task, observed(task, value=3), signed="after")
    swapped = signed.model_copy(update={"observation": observed(task)})
    held = of_step(scope(task), swapped, None, 1)
    assert "differs from the observation the verifier signed" in held.observation.message


def test_a_probe_error_counts_only_when_its_proof_says_so_too() -> None:
    task = spec()
    nothing = observed(task, Outcome.PROBE_ERROR, value=None)
    honest = reading(task, nothing)
    assert of_step(scope(task), honest, None, 1) is honest
    relayed = honest.model_copy(
        update={"proof": honest.proof.model_copy(update={"result": "pass"})}
    )
    held = of_step(scope(task), relayed, None, 1)
    assert "says nothing was observed, but its proof says pass" in held.observation.message


def test_a_reading_is_held_to_the_pre_reads_before_state() -> None:
    task = spec()
    before = observed(task, Outcome.MISMATCH, value=0)
    judged = reading(task, observed(task, before_value=0))
    assert of_step(scope(task), judged, before, 1) is judged
    other_before = of_step(scope(task), reading(task, observed(task, before_value=1)), before, 1)
    assert "before-state from the pre-read" in other_before.observation.message


def test_a_reading_made_by_the_actor_is_not_independent() -> None:
    task = spec()
    by_actor = reading(task, observed(task), checked_by="actor-7")
    held = independent(scope(task), by_actor, None, ["actor-7"], 1)
    assert "the actor can't grade itself" in held.observation.message
    assert independent(scope(task), by_actor, None, ["someone-else"], 1) is by_actor


@pytest.mark.parametrize(
    ("outcome", "value", "before", "landed"),
    [
        (Outcome.PASS, 2, None, True),
        (Outcome.PROBE_ERROR, None, None, True),
        (Outcome.EMPTY, None, None, False),
        (Outcome.MISMATCH, 1, None, True),
        (Outcome.MISMATCH, 0, (Outcome.MISMATCH, 0), False),
        (Outcome.MISMATCH, 1, (Outcome.MISMATCH, 0), True),
        (Outcome.EMPTY, None, (Outcome.PROBE_ERROR, None), False),
    ],
)
def test_nothing_landed_only_when_the_system_of_record_is_as_the_act_found_it(
    outcome: Outcome, value: Any, before: tuple[Outcome, Any] | None, landed: bool
) -> None:
    task = spec()
    then = None if before is None else observed(task, before[0], value=before[1])
    assert nothing_landed(reading(task, observed(task, outcome, value=value)), then) is not landed


def test_nothing_landed_is_unknown_without_a_value_or_evidence_to_compare() -> None:
    task = spec()
    bare = observed(task, Outcome.MISMATCH, value=None, evidence=None)
    assert not nothing_landed(reading(task, bare), observed(task, Outcome.MISMATCH, value=0))


def test_a_signed_reading_must_answer_the_read_asked_for() -> None:
    task = spec()
    assert answers_request(reading(task, observed(task)), "req-1") is None
    assert (
        answers_request(reading(task, observed(task), signed="after", request="req-1"), "req-1")
        is None
    )
    other = answers_request(reading(task, observed(task), signed="after", request="req-0"), "req-1")
    assert other == "the reading answers another read than the one asked for"
    older = answers_request(reading(task, observed(task), signed="after"), "req-1")
    assert older is not None and "upgrade verifiers before runners" in older


def test_only_unanswered_steps_and_unrefused_probe_errors_are_read_again() -> None:
    task = spec(3)
    error = reading(task, observed(task, Outcome.PROBE_ERROR, value=None), index=1)
    refused = reading(task, observed(task, Outcome.PROBE_ERROR, value=None), index=2)
    got = {
        0: reading(task, observed(task)),
        1: error,
        2: refused.model_copy(update={"refused": True}),
    }
    assert still_to_read([0, 1, 2], got) == [1]
    assert still_to_read([0, 1, 2], {}) == [0, 1, 2]


def test_unobserved_names_why_and_the_runner() -> None:
    task = spec()
    got = unobserved(scope(task), 0, "verifier returned no reading")
    assert got.observation.outcome == Outcome.PROBE_ERROR
    assert got.observation.message == "verifier returned no reading"
    assert got.proof.result == "probe-error" and got.proof.checked_by == "runner-1"
