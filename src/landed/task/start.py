"""How a task's workflow is started, the same from ``landed.Client`` and from a parent
workflow (``landed.agents.temporal``): its workflow id is its task id, a closed run of that id
is never started again, and it carries its owner (and loop) as search attributes from the start.
Pure data, safe in workflow code."""

from __future__ import annotations

from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)

from landed.task.names import LOOP_ATTRIBUTE
from landed.task.spec import TaskSpec

__all__ = ["TASK_ID_REUSE", "start_search_attributes"]

#: One task id never acts twice: a closed run of the id is that task, done, whatever its verdict.
TASK_ID_REUSE = WorkflowIDReusePolicy.REJECT_DUPLICATE

_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
_RUNG = SearchAttributeKey.for_keyword("LandedRung")
_LOOP = SearchAttributeKey.for_keyword(LOOP_ATTRIBUTE)


def start_search_attributes(spec: TaskSpec) -> TypedSearchAttributes:
    """What a task is searchable by from its start: its owner, the rung ``planned`` and
    (GOV-9) its loop; the workflow upserts its verdict and rung as it goes."""
    pairs = [SearchAttributePair(_OWNER, spec.owner), SearchAttributePair(_RUNG, "planned")]
    if spec.loop:
        pairs.append(SearchAttributePair(_LOOP, spec.loop))
    return TypedSearchAttributes(pairs)
