"""Frame checks as plain functions (landed.task.frames, hold_to_frames): no Temporal."""

from __future__ import annotations

from typing import Any

from test_readings import AT, KEY, observed, reading, scope, spec

from landed.probes.contract import Outcome
from landed.receipts.grading import grade
from landed.receipts.ladder import Status
from landed.receipts.verdict import FrameCheck, TaskVerdict, hold_to_frames
from landed.signing import TrustStore
from landed.task.decisions import RunFacts, graded_receipt
from landed.task.durability import RecheckInput, lifecycle_receipt, recheck_holds
from landed.task.frames import (
    frame_checks,
    frame_problem,
    frame_view,
    pre_read_count,
    recheck_frames,
)
from landed.task.messages import ActReport, Routing
from landed.task.readings import of_step
from landed.task.spec import TaskSpec
from landed.task.validate import check_spec


def framed(frames: int = 1) -> TaskSpec:
    task = spec()
    frame = {**task.proof_plan[0].model_dump(mode="json"), "action": "batch k stays"}
    frame["expect"] = {"type": "count", "value": 30}
    return TaskSpec.model_validate({**task.model_dump(mode="json"), "frames": [frame] * frames})


def obs(outcome: Outcome = Outcome.PASS, value: Any = 30, **fields: Any) -> Any:
    return observed(frame_view(framed()), outcome, value=value, **fields)


def test_a_frame_that_reads_the_same_and_passes_both_times_holds() -> None:
    assert frame_problem(obs(), obs()) is None


def test_a_frame_that_changed_names_both_readings() -> None:
    why = frame_problem(obs(), obs(Outcome.EMPTY, value=0, message="the probe returned 0"))
    assert why is not None and why.startswith("it changed: after the act it reads empty")
    # Same outcome, other bytes (a count expectation that still passes, a tree that differs).
    same_value = obs(evidence=obs(value=31).evidence)
    assert "it changed: it read 30 before the act and 30 after" in str(
        frame_problem(obs(), same_value)
    )


def test_a_frame_not_read_or_not_observed_holds_nothing() -> None:
    assert "not read before the act" in str(frame_problem(None, obs()))
    assert "not read back" in str(frame_problem(obs(), None))
    error = obs(Outcome.PROBE_ERROR, value=None, message="connection refused")
    assert "observed nothing (connection refused)" in str(frame_problem(obs(), error))
    assert "before the act observed nothing" in str(frame_problem(error, obs()))


def test_a_frame_that_did_not_hold_before_the_act_is_not_shown_unchanged() -> None:
    before = obs(Outcome.MISMATCH, value=29, message="the probe returned 29")
    assert "did not hold before the act (mismatch" in str(frame_problem(before, before))


def test_frame_checks_pair_each_frame_with_its_readings_and_miss_none() -> None:
    task = framed(2)
    checks = frame_checks(task, [obs(), obs()], [obs()])
    assert checks[0] == FrameCheck("batch k stays", None)
    assert checks[1].problem is not None and "not read back" in checks[1].problem
    assert pre_read_count(task) == 3 and frame_view(task).proof_plan == task.frames


def test_hold_to_frames_caps_a_done_verdict_and_names_the_frame() -> None:
    done = TaskVerdict(Status.VERIFIED, True, ())
    assert hold_to_frames(done, True, [FrameCheck("keep", None)]) == done
    held = hold_to_frames(done, True, [FrameCheck("keep", None), FrameCheck("other", "it changed")])
    assert held.status == Status.EXECUTED and not held.meets_bar
    assert held.findings == (
        "FRAME: frame #2 ('other') must be left as it was, but it changed; the task is not done",
    )


def graded(frames_after: tuple[Any, ...], attempt: int = 1) -> Any:
    task = framed()
    proof = reading(task, observed(task, Outcome.PASS, value=2), signed="after").proof
    facts = RunFacts(
        attempt=attempt,
        pre_read=True,
        spec_sha256="s" * 64,
        run_id="run-a",
        runner="runner-1",
        frames_before=(obs(),),
        frames_after=frames_after,
    )
    report = ActReport(claimed_status="done", report="inserted 2 rows", actor="actor-1")
    trusted = TrustStore([KEY.public_key])
    return graded_receipt(task, report, [proof], facts, settled_at=AT, trusted=trusted)


def test_the_graded_receipt_is_not_done_when_a_frame_changed() -> None:
    assert graded((obs(),)).verdict == "verified"
    assert graded((obs(),)).landed.frames == [{"action": "batch k stays", "held": True}]
    changed = graded((obs(Outcome.EMPTY, value=0),))
    assert changed.verdict == "executed"
    assert changed.landed.frames == [{"action": "batch k stays", "held": False}]
    assert any(f.startswith("FRAME: frame #1 ('batch k stays')") for f in changed.landed.findings)
    # landed check, which knows nothing of frames, holds the receipt to the runner's verdict.
    checked = grade(changed, signature_ok=TrustStore([KEY.public_key]).signature_ok)
    assert checked.proven_status == "executed" and not checked.meets_bar
    # Unread after the act: fail closed.
    assert graded(()).verdict == "executed"


def test_frames_are_validated_at_submit_like_plan_steps() -> None:
    data = framed().model_dump(mode="json")
    data["frames"][0]["probe"]["source"] = "postgres://u:pw@host/db"
    try:
        check_spec(data)
    except ValueError as exc:
        assert "frames.0.probe" in str(exc) and "pw" not in str(exc)
    else:
        raise AssertionError("a frame naming a DSN was accepted")
    data = {**framed().model_dump(mode="json"), "pre_read": False}
    assert any("frames are read in the pre-read" in w for w in check_spec(data).warnings)


def test_a_frame_reading_counts_only_signed_for_its_frame_phase() -> None:
    view = frame_view(framed())
    frame_scope = scope(view)
    for phase in ("frame-before", "frame-after"):
        signed = reading(view, obs(), signed=phase)
        assert of_step(frame_scope, signed, None, 1, signed_as=phase).observation.outcome == "pass"
    # A plan step's read-back (or a pre-read) is no frame reading, nor one phase the other's.
    for phase, wanted in (("after", "frame-after"), ("frame-before", "frame-after")):
        held = of_step(frame_scope, reading(view, obs(), signed=phase), None, 1, signed_as=wanted)
        assert held.observation.outcome == Outcome.PROBE_ERROR
        assert "is not a trusted verifier's" in held.observation.message


LATER = "at the recheck 60 s after the task settled"


def test_a_recheck_compares_each_frame_with_its_before_state_or_cannot_tell() -> None:
    task = framed(2)
    gone = obs(Outcome.EMPTY, value=0, message="the probe returned 0")
    held, changed = recheck_frames(task, [obs(), obs()], [obs(), gone], when=LATER)
    assert held == FrameCheck("batch k stays", None)
    assert changed is not None and str(changed.problem).startswith(f"it changed: {LATER}")
    error = obs(Outcome.PROBE_ERROR, value=None, message="refused")
    # Not observed now, or no before-state (a recheck started before rechecks read frames).
    assert recheck_frames(task, [obs(), obs()], [error, None], when=LATER) == [None, None]
    assert recheck_frames(task, [], [obs(), obs()], when=LATER) == [None, None]


def test_a_changed_frame_reverses_the_recheck_and_an_unread_one_confirms_nothing() -> None:
    task = framed()
    plan = {0: reading(task, observed(task))}
    changed = FrameCheck("batch k stays", "it changed")
    assert recheck_holds(plan, 1, [FrameCheck("batch k stays", None)]) == "confirmed"
    assert recheck_holds(plan, 1, [changed]) == "reversed"
    assert recheck_holds(plan, 1, [None]) == "unobserved"
    # Seen changed reverses even when a step could not be read; a step gone reverses too.
    unseen = {0: reading(task, observed(task, Outcome.PROBE_ERROR, None))}
    assert recheck_holds(unseen, 1, [changed]) == "reversed"
    assert recheck_holds({0: reading(task, observed(task, Outcome.EMPTY, 0))}, 1, [None]) == (
        "reversed"
    )


def test_a_recheck_reversed_by_a_frame_names_it_in_a_frame_finding() -> None:
    task = framed(2)
    settled = graded((obs(), obs()))
    inp = RecheckInput(
        spec=task,
        routing=Routing(actor_task_queue="a", verifier_task_queue="v", runner="runner-2"),
        before=[None],
        attempt=1,
        settled=settled,
        frames_before=[obs(), obs()],
    )
    gone = obs(Outcome.EMPTY, value=0, message="the probe returned 0")
    frames = recheck_frames(task, inp.frames_before, [None, gone], when=LATER)
    row = lifecycle_receipt(inp, list(settled.proof[-1:]), "reversed", at=AT, frames=frames)
    assert row.verdict == "reversed" and row.landed is not None
    ext = row.landed.model_dump()
    (found,) = [f for f in ext["findings"] if f.startswith("FRAME:")]
    assert found.startswith("FRAME: frame #2 ('batch k stays') must be left as it was, but ")
    assert LATER in found
    assert ext["frames"] == [
        {"action": "batch k stays", "held": False},
        {"action": "batch k stays", "held": False},
    ]
