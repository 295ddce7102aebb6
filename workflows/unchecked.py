"""No act without a check that can run, inside the workflow (``landed.task.checkable``): the
client's role check may have been skipped or outrun by a redeploy, so the workflow holds the
rule itself, before any act."""

from __future__ import annotations

from temporalio import workflow

from landed.workflows.state import ActFacts, RunState
from landed.workflows.versions import UNCHECKED_PATCH, UNKNOWN_ACT_PATCH

__all__ = ["UNCHECKED_PATCH", "UNKNOWN_ACT_PATCH", "unchecked"]


def unchecked(run: RunState, act: ActFacts) -> list[str]:
    """Why nothing can check this task (each with its fix), or [] when something can."""
    if act.unknown_act is not None:
        return [act.unknown_act]  # its patch was taken where the actor's refusal came in
    if run.refused and workflow.patched(UNCHECKED_PATCH):
        return list(run.refused)
    return []
