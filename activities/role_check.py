"""The runner's and the actor's answers to LandedPreflight (``landed.task.checkable``): where
the runner sends act and verify, and whether the actor knows an act (the verifier's answer is
``config_check``). Light on purpose: the actor loads no probe code for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio import activity

from landed.task.checkable import (
    ACT_KNOWN_ACTIVITY,
    ROLE_QUEUES_ACTIVITY,
    ActKnownInput,
    ActKnownOutput,
    RoleQueues,
    act_problem,
)
from landed.task.messages import Routing

__all__ = ["ActorCheck", "RunnerCheck"]


class RunnerCheck:
    def __init__(self, routing: Routing) -> None:
        actor, verifier = routing.actor_task_queue, routing.verifier_task_queue
        self._queues = RoleQueues(actor=actor, verifier=verifier)

    @activity.defn(name=ROLE_QUEUES_ACTIVITY)
    async def queues(self) -> RoleQueues:
        return self._queues


class ActorCheck:
    """Names only: whether an act is registered here. No act code runs."""

    def __init__(self, acts: Mapping[str, Any], identity: str) -> None:
        self._names = sorted(acts)
        self._identity = identity

    @activity.defn(name=ACT_KNOWN_ACTIVITY)
    async def act_known(self, inp: ActKnownInput) -> ActKnownOutput:
        problem = act_problem(inp.act, self._names)
        return ActKnownOutput(actor=self._identity, problem=problem, registered=self._names)
