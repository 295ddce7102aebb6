"""Recheck: a verified outcome read again after its horizon; a reversal is appended, not hidden.

Started by AgentTask when it settles verified with ``durability.recheck_after`` set, as a
workflow of its own (abandoned by the task's), so the task's result is not held for the horizon.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from landed.task.assemble import trust_from_pems
    from landed.task.durability import RecheckInput, lifecycle_receipt, recheck_holds
    from landed.task.frames import recheck_frames
    from landed.task.messages import Routing, SettleInput
    from landed.task.names import RECHECK_WORKFLOW
    from landed.task.readings import ReadScope, independent
    from landed.task.steps import RunnerSteps

from landed.workflows.claims import SETTLE_RETRY
from landed.workflows.frames import FrameReader
from landed.workflows.reads import Reader, chain_run_id
from landed.workflows.state import RunState
from landed.workflows.versions import RECHECK_FRAMES_PATCH

__all__ = ["RECHECK_FRAMES_PATCH", "Recheck"]


@workflow.defn(name=RECHECK_WORKFLOW)
class Recheck:
    """Sleeps until the horizon, reads every plan step and every frame back, appends confirmed
    or reversed."""

    @workflow.run
    async def run(self, inp: RecheckInput) -> str:
        spec = inp.spec
        await workflow.sleep(spec.durability.recheck_after or timedelta(0))
        run = RunState(before=list(inp.before), attempt=inp.attempt, routing=inp.routing)
        run.deadline = workflow.now() + spec.time_cap
        trusted = trust_from_pems(inp.routing.trusted_keys)

        def scope(routing: Routing) -> ReadScope:
            return ReadScope(
                spec=spec,
                runner=routing.runner,
                trusted=trusted,
                run_id=chain_run_id(),
                asked_at=run.asked_at or workflow.now(),
            )

        reader = Reader(spec, run, scope, lambda err: False)
        every = list(range(len(spec.proof_plan)))
        read = await reader.read(inp.routing, "after", every, run.before, attempt=inp.attempt)
        held = {
            i: independent(scope(inp.routing), read[i], run.before[i], inp.actors, inp.attempt)
            for i in every
        }
        frames = []
        if spec.frames and workflow.patched(RECHECK_FRAMES_PATCH):
            # What the act had to leave alone must still be as it was: the plan's steps read
            # pass while another batch is gone would be a false confirmation.
            framer = FrameReader(spec, run, scope, lambda err: False)
            again = await framer.read(
                inp.routing, "frame-after", attempt=inp.attempt, actors=inp.actors
            )
            horizon = (spec.durability.recheck_after or timedelta(0)).total_seconds()
            when = f"at the recheck {horizon:g} s after the task settled"
            frames = recheck_frames(spec, inp.frames_before, again, when=when)
        stage = recheck_holds(held, len(every), frames)
        if stage == "unobserved":
            # Nothing could be read: neither confirmed nor reversed, the settled row stands.
            return stage
        proofs = [held[i].proof for i in every]
        row = lifecycle_receipt(inp, proofs, stage, at=workflow.now(), frames=frames)
        await workflow.execute_local_activity_method(
            RunnerSteps.settle,
            SettleInput(receipt=row),
            start_to_close_timeout=spec.timeouts.settle,
            retry_policy=SETTLE_RETRY,
        )
        return stage
