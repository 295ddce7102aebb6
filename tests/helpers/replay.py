"""AgentTask histories: the committed ones (tests/temporal/histories), recording them again,
replaying them in the shared and the strict sandbox, and interceptors on the runner's workflow
calls (an outbound interceptor, a hook on each local activity)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import (
    Interceptor,
    Replayer,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from temporalio.workflow import ActivityHandle

from helpers.histories import HISTORIES, keep
from landed.temporal.plugin import landed_plugin, strict_workflow_runner
from landed.workflows.agent_task import AgentTask

# Histories made with the test's timer after the claiming step: they replay with it only.
TIMER_HISTORIES = HISTORIES / "claim_then_timer"


def record_history(name: str, history: WorkflowHistory, folder: Path = HISTORIES) -> None:
    """With LANDED_RECORD_HISTORIES=1, write ``history`` as the committed fixture ``name``.

    Only after a deliberate change to the workflow's commands: record the fixtures again (and
    drain running tasks before such a change is deployed). Each fixture is written by the test
    that makes its history: run every tests/workflows/test_agent_task_*.py file with the
    variable set, not one test.
    """
    keep(history, folder / f"agent_task_{name}.json")


async def replays_as_recorded(histories: list[WorkflowHistory], *interceptors: Interceptor) -> None:
    """Each history replays without a nondeterminism error, in the shared and strict sandbox."""
    shared = Replayer(workflows=[AgentTask], plugins=[landed_plugin()], interceptors=interceptors)
    # Workers share the workflow module across runs; replayed with it re-imported under the
    # SDK's restricted standard library, a nondeterministic call in it fails here.
    strict = Replayer(
        workflows=[AgentTask],
        data_converter=pydantic_data_converter,
        workflow_runner=strict_workflow_runner(),
        interceptors=interceptors,
    )
    for replayer in (shared, strict):
        for history in histories:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (history.workflow_id, result.replay_failure)


class WithOutbound(Interceptor):
    """Puts ``outbound`` between the runner's workflow code and the SDK."""

    def __init__(self, outbound: type[WorkflowOutboundInterceptor]) -> None:
        self.outbound = outbound

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        outbound = self.outbound

        class _Inbound(WorkflowInboundInterceptor):
            def init(self, next: WorkflowOutboundInterceptor) -> None:
                super().init(outbound(next))

        return _Inbound


def on_local_activity(
    hook: Callable[
        [StartLocalActivityInput, Callable[[StartLocalActivityInput], ActivityHandle[Any]]],
        ActivityHandle[Any],
    ],
) -> Interceptor:
    """Starts each local activity of the runner's workflows through ``hook(input, start)``,
    where ``start`` starts it as the workflow asked."""

    class _Outbound(WorkflowOutboundInterceptor):
        def start_local_activity(self, input: StartLocalActivityInput) -> ActivityHandle[Any]:
            return hook(input, super().start_local_activity)

    return WithOutbound(_Outbound)
