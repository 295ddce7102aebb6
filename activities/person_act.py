"""The act of a repair that a person did: it reports the person's word (`landed repair done`),
a claim like any act's; the repair's read-back decides whether the loop is repaired."""

from __future__ import annotations

from typing import Any

from landed.loops.spec import PERSON_ACT
from landed.task.acts import ActContext, act
from landed.task.messages import ActReport

__all__ = ["person"]


@act(PERSON_ACT)
async def person(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    by = str(spec.get("by") or "a person")
    return ActReport(claimed_status="done", report=f"{by} says the repair is done")
