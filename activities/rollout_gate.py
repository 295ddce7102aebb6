"""The rollout gate's runner steps: where the verifier's queue routes before the canary, and
what the ledger and Temporal say about the canary once it settled.

Which build ran each step is read from the canary's history, where the server stamps the build
of every workflow task a versioned worker completed and every activity task it started: not
from anything a step said about itself.
"""

from __future__ import annotations

import asyncio
import time

from temporalio import activity
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from landed.ledger.audit import audit
from landed.ledger.base import Ledger
from landed.task.assemble import trust_from_pems
from landed.task.canary import CanaryFacts
from landed.task.messages import Routing
from landed.task.names import CANARY_FACTS_ACTIVITY, CANARY_VERIFIER_ACTIVITY, VERIFY_ACTIVITY

__all__ = ["RolloutGateActivities", "builds_in"]

_E = EventType


def builds_in(events: list[HistoryEvent], verifier_queue: str) -> tuple[list[str], list[str]]:
    """(verifier builds, runner builds): the builds that started the verify activities
    scheduled on the verifier's queue, and that completed the workflow tasks; sorted, once."""
    verify: set[int] = set()
    verifier: set[str] = set()
    runner: set[str] = set()
    for e in events:
        if e.event_type == _E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            if a.activity_type.name == VERIFY_ACTIVITY and a.task_queue.name == verifier_queue:
                verify.add(e.event_id)
        elif e.event_type == _E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            # The server stamps the build of the worker it gave the task to.
            c = e.activity_task_started_event_attributes
            if c.scheduled_event_id in verify:
                verifier.add(c.worker_version.build_id)
        elif e.event_type == _E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            w = e.workflow_task_completed_event_attributes
            runner.add(w.deployment_version.build_id or w.worker_version.build_id)
    return sorted(verifier), sorted(runner)


class RolloutGateActivities:
    """Reads the runner's ledger (its own) and the canary's history."""

    def __init__(self, ledger: Ledger, routing: Routing) -> None:
        self._ledger = ledger
        self._routing = routing

    @activity.defn(name=CANARY_FACTS_ACTIVITY)
    async def facts(self, task_id: str) -> CanaryFacts:
        receipt = await self._ledger.latest(task_id)
        # The links of the whole chain (the signed heads are the runner's own key's to check:
        # `landed ledger verify --trust`); a canary row on a broken chain proves nothing.
        chain = await audit(self._ledger, None)
        trusted = trust_from_pems(self._routing.trusted_keys)
        history = await activity.client().get_workflow_handle(task_id).fetch_history()
        verifier, runner = builds_in(list(history.events), self._routing.verifier_task_queue)
        key_id = receipt.landed.key_id if receipt and receipt.landed else None
        return CanaryFacts(
            task_id=task_id,
            verdict=receipt.verdict if receipt else None,
            verdict_by=receipt.verdict_by if receipt else None,
            key_id=key_id,
            key_trusted=key_id is not None and key_id in trusted,
            chain_findings=[f.message for f in chain.findings],
            verifier_builds=verifier,
            runner_builds=runner,
        )

    @activity.defn(name=CANARY_VERIFIER_ACTIVITY)
    async def verifier_current(self, build_id: str, wait_s: float) -> str | None:
        """Wait until the verifier's task queue routes to ``build_id`` (its routing as the
        queue itself reports it, once a promotion has reached it); the build it routes to when
        the wait ends, which the workflow judges."""
        deadline = time.monotonic() + wait_s
        while True:
            current = await self._verifier_routed()
            if current == build_id or time.monotonic() >= deadline:
                return current
            activity.heartbeat(current)
            await asyncio.sleep(min(2.0, max(deadline - time.monotonic(), 0.1)))

    async def _verifier_routed(self) -> str | None:
        client = activity.client()
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=self._routing.verifier_task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
            )
        )
        return described.versioning_info.current_deployment_version.build_id or None
