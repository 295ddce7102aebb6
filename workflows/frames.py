"""Reading a task's frames on the verifier: the plan's reader, pointed at the frames."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from landed.probes.contract import Observation
    from landed.task.frames import frame_view
    from landed.task.messages import ReadPhase, Routing
    from landed.task.readings import ReadScope, independent
    from landed.task.spec import TaskSpec

from landed.workflows.reads import Reader
from landed.workflows.state import RunState

__all__ = ["FrameReader"]


class FrameReader:
    """Reads every frame of the task, re-reading probe-errors as plan steps are, and holds each
    reading to its frame: signed by a trusted verifier for this phase, run and request, of the
    frame's probe and expectation, and not made by the actor's identity (else not observed)."""

    def __init__(
        self,
        spec: TaskSpec,
        run: RunState,
        scope: Callable[[Routing], ReadScope],
        cancelled: Callable[[BaseException], bool],
    ) -> None:
        self._view = frame_view(spec)
        self._plan_scope = scope
        self._reader = Reader(self._view, run, self._scope, cancelled)

    def _scope(self, routing: Routing) -> ReadScope:
        return dataclasses.replace(self._plan_scope(routing), spec=self._view)

    async def read(
        self, routing: Routing, phase: ReadPhase, *, attempt: int, actors: Sequence[str]
    ) -> list[Observation | None]:
        """Each frame's reading in ``phase`` (frame-before or frame-after), held to its frame;
        no read at all (and no command in the history) for a task without frames."""
        every = list(range(len(self._view.proof_plan)))
        if not every:
            return []
        readings = await self._reader.read(
            routing, phase, every, [None] * len(every), attempt=attempt
        )
        scope = self._scope(routing)
        return [
            independent(scope, readings[i], None, actors, attempt, signed_as=phase).observation
            for i in every
        ]
