"""Starting agent tasks from agent code: ``landed.Client``; one task id never acts twice."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import Client as TemporalClient
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

# Governance gates: a person's decision at the approval gate.
from landed.ledger.base import LedgerError
from landed.receipts.model import Receipt
from landed.task.messages import (
    LookupInput,
    LookupOutput,
    Progress,
    ReceiptQuery,
    Step,
    spec_digest,
)
from landed.task.names import AGENT_TASK_WORKFLOW, LOOKUP_WORKFLOW, SEARCH_ATTRIBUTES
from landed.task.spec import TaskSpec
from landed.task.start import TASK_ID_REUSE, start_search_attributes
from landed.task.validate import check_spec
from landed.telemetry import tracing
from landed.temporal.approvals import HeldTask, list_held
from landed.temporal.client_errors import (
    NamespaceNotReady,
    NotDone,
    RunnerNotAnswering,
    TaskIdReused,
    TaskNotSettled,
    not_settled,
    unreachable,
)
from landed.temporal.handle import TaskHandle, TaskStatus
from landed.temporal.plugin import connect, connect_options, worker_identity
from landed.temporal.role_check import RoleCheck, TaskRefused
from landed.temporal.settings import DEFAULT_RUNNER_QUEUE
from landed.temporal.waits import through_restart, wait_result

__all__ = ["Client"]

# A query is answered by the runner's worker; one that is down or stalled must not hold the
# caller for the SDK's default RPC timeout.
_QUERY_TIMEOUT = timedelta(seconds=10)


# How long a lookup of a forgotten task's receipt waits for a runner to read the ledger.
_LOOKUP_TIMEOUT = timedelta(seconds=30)


class Client:
    """landed's client: submit tasks, watch them, fetch their receipts."""

    def __init__(
        self,
        temporal: TemporalClient,
        *,
        task_queue: str = DEFAULT_RUNNER_QUEUE,
        lookup_timeout: timedelta = _LOOKUP_TIMEOUT,
        check_roles: bool = True,
    ):
        self._temporal = temporal
        self._task_queue = task_queue
        # No act without a check that can run: ask the roles before a task starts (False:
        # start it anyway; the workflow still settles blocked, with no act, if nothing can).
        self._roles = RoleCheck(temporal, task_queue) if check_roles else None
        # How long reading a forgotten task's receipt waits for a runner to answer.
        self._lookup_timeout = lookup_timeout

    @classmethod
    async def connect(
        cls,
        address: str | None = None,
        *,
        namespace: str | None = None,
        profile: str | None = None,
        task_queue: str | None = None,
        identity: str | None = None,
        check_roles: bool = True,
    ) -> Client:
        """Connect like every landed process: Temporal's environment configuration
        (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS) unless given here.
        ``task_queue`` is the runner's queue (default LANDED_TASK_QUEUE or landed-runner).

        Where OTEL_* names an endpoint and the process has not configured landed's tracing
        (``landed.telemetry.tracing.install`` with the application's own provider), tracing is
        configured here (service ``landed-client``), so ``run()`` starts the task's trace."""
        tracing.ensure("landed-client")
        try:
            temporal = await connect(
                identity=identity or worker_identity("client"),
                address=address,
                namespace=namespace,
                profile=profile,
            )
        except RuntimeError as exc:  # the SDK's bare "Failed client connect: ..."
            target = connect_options(address=address, namespace=namespace, profile=profile)
            raise unreachable(str(target["target_host"]), exc) from exc
        queue = task_queue or os.environ.get("LANDED_TASK_QUEUE") or DEFAULT_RUNNER_QUEUE
        return cls(temporal, task_queue=queue, check_roles=check_roles)

    @property
    def temporal(self) -> TemporalClient:
        return self._temporal

    # --- fleet: `landed pause` starts the switch's workflow on the runner's queue ---
    @property
    def task_queue(self) -> str:
        """The runner's task queue this client starts tasks on."""
        return self._task_queue

    async def start(self, task: TaskSpec | Mapping[str, Any] | str | bytes) -> TaskHandle:
        """Validate and start a task; the same task id again returns the existing task.

        Raises TaskSpecError (field and reason) for an invalid spec. The id can never start a
        second run, whether the first is running or closed: it attaches to that run, and raises
        TaskIdReused when that run is of another spec. Raises TaskRefused, naming the fix,
        when a running role cannot run or check the task, or did not answer (unless the
        client was made with ``check_roles=False``).
        """
        check = check_spec(task)
        spec = check.spec
        await self._check_roles(spec)
        try:
            handle: WorkflowHandle[Any, Receipt] = await through_restart(
                lambda: self._start_workflow(spec)
            )
            existing = False
        except WorkflowAlreadyStartedError:
            handle = self._temporal.get_workflow_handle(spec.task_id, result_type=Receipt)
            theirs = await self._started_digest(handle)
            digest = spec_digest(spec)
            if theirs != digest:
                what = "another task's" if theirs else "a run whose task cannot be read"
                raise TaskIdReused(
                    f"task id {spec.task_id!r} is already {what} (its spec {theirs or 'unknown'}, "
                    f"this one {digest}); its receipt would not be this task's: give the new "
                    f"task its own task_id"
                ) from None
            existing = True
            desc = await handle.describe()
            if desc.status not in (
                WorkflowExecutionStatus.RUNNING,
                WorkflowExecutionStatus.COMPLETED,
                WorkflowExecutionStatus.CONTINUED_AS_NEW,
            ):
                state = desc.status.name if desc.status is not None else "UNKNOWN"
                raise TaskNotSettled(not_settled(spec.task_id, state)) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in str(exc):
                names = " ".join(f"--name {n} --type Keyword" for n in SEARCH_ATTRIBUTES)
                raise NamespaceNotReady(
                    f"the namespace lacks landed's search attributes ({exc}); start a landed "
                    f"runner once (it registers them) or run: temporal operator "
                    f"search-attribute create {names}"
                ) from exc
            raise
        return TaskHandle(handle, check.warnings, existing)

    async def _start_workflow(self, spec: TaskSpec) -> WorkflowHandle[Any, Receipt]:
        return await self._temporal.start_workflow(
            AGENT_TASK_WORKFLOW,
            spec,
            id=spec.task_id,
            task_queue=self._task_queue,
            result_type=Receipt,
            id_reuse_policy=TASK_ID_REUSE,
            # A running task of this id is reported, not joined blind: it may be another's.
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            search_attributes=start_search_attributes(spec),
        )

    async def _check_roles(self, spec: TaskSpec) -> None:
        """TaskRefused unless the roles can run and check ``spec``; a task id that already
        runs (or ran) attaches as always, whatever the roles say now."""
        roles = self._roles
        if roles is None:
            return
        try:
            # A server restarting answers UNAVAILABLE: the check waits as the start does.
            await through_restart(lambda: roles.check(spec))
        except TaskRefused:
            if not await self._exists(spec.task_id):
                raise

    async def _exists(self, task_id: str) -> bool:
        try:
            await self._temporal.get_workflow_handle(task_id).describe()
        except RPCError:
            return False
        return True

    async def _started_digest(self, handle: WorkflowHandle[Any, Receipt]) -> str | None:
        """spec_digest() of the task the existing run was started with (its first event)."""
        async for event in handle.fetch_history_events():
            attrs = event.workflow_execution_started_event_attributes
            if not attrs.HasField("input") or not attrs.input.payloads:
                return None
            try:
                (started,) = await self._temporal.data_converter.decode(
                    attrs.input.payloads, [TaskSpec]
                )
            except (ValueError, TypeError, RuntimeError):  # not a TaskSpec under this id
                return None
            return spec_digest(started) if isinstance(started, TaskSpec) else None
        return None

    def task(self, task_id: str) -> TaskHandle:
        """A handle on an existing task by its id (to approve, reject or watch it)."""
        handle = self._temporal.get_workflow_handle(task_id, result_type=Receipt)
        return TaskHandle(handle, [], existing=True)

    async def held(self) -> list[HeldTask]:
        """The tasks waiting at their approval gate (GOV-5), with age and who may approve."""
        return await list_held(self._temporal)

    async def run(
        self,
        task: TaskSpec | Mapping[str, Any] | str | bytes,
        *,
        raise_if_not_done: bool = False,
    ) -> Receipt:
        """Start (or attach to) a task and wait for its settled receipt.

        ``receipt.done`` says whether it is done and ``receipt.why`` why. With
        ``raise_if_not_done``, a receipt that is not done raises ``NotDone`` carrying it."""
        handle = await self.start(task)
        receipt = await handle.result()
        if raise_if_not_done and not receipt.done:
            raise NotDone(receipt)
        return receipt

    async def status(self, task_id: str) -> TaskStatus:
        """The task's current step and verdict; raises RPCError(NOT_FOUND) for an id neither
        Temporal nor the runner's ledger knows."""
        handle = self._temporal.get_workflow_handle(task_id, result_type=Receipt)
        try:
            desc = await handle.describe()
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            stored = await self._from_ledger(task_id, err)
            return TaskStatus(
                task_id=task_id,
                execution="FORGOTTEN",
                step=Step.SETTLED.value,
                rung=(stored.landed.rung if stored.landed else None) or "unknown",
                verdict=stored.verdict,
                settled=True,
            )
        execution = desc.status.name if desc.status is not None else "UNKNOWN"
        if desc.status == WorkflowExecutionStatus.COMPLETED:
            receipt = await wait_result(handle)
            rung = receipt.landed.rung if receipt.landed and receipt.landed.rung else "unknown"
            return TaskStatus(
                task_id=task_id,
                execution=execution,
                step=Step.SETTLED.value,
                rung=rung,
                verdict=receipt.verdict,
                settled=True,
            )
        if desc.status == WorkflowExecutionStatus.RUNNING:
            try:
                progress: Progress = await handle.query(
                    "progress", result_type=Progress, rpc_timeout=_QUERY_TIMEOUT
                )
            except (WorkflowQueryFailedError, RPCError) as exc:
                return TaskStatus(
                    task_id=task_id,
                    execution=execution,
                    step=f"unknown (no runner answered: {exc})",
                    rung="unknown",
                )
            return TaskStatus(
                task_id=task_id,
                execution=execution,
                step=progress.step.value,
                rung=progress.rung,
                verdict=progress.verdict,
            )
        return TaskStatus(task_id=task_id, execution=execution, step="closed", rung="unknown")

    async def receipt(self, task_id: str) -> Receipt:
        """The settled receipt, or the receipt so far while the task runs.

        A receipt so far has no ``settled_at``: it is not in the ledger yet, whatever its
        verdict reads. Raises TaskNotSettled when the workflow closed without settling. Once
        Temporal has dropped the run (its retention), the runner reads the receipt from its
        ledger; an id neither knows raises RPCError(NOT_FOUND).
        """
        handle = self._temporal.get_workflow_handle(task_id, result_type=Receipt)
        try:
            desc = await handle.describe()
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            return await self._from_ledger(task_id, err)
        if desc.status == WorkflowExecutionStatus.COMPLETED:
            settled: Receipt = await wait_result(handle)
            return settled
        if desc.status != WorkflowExecutionStatus.RUNNING:
            state = desc.status.name if desc.status is not None else "UNKNOWN"
            raise TaskNotSettled(not_settled(task_id, state))
        try:
            answer: ReceiptQuery = await handle.query(
                "receipt", result_type=ReceiptQuery, rpc_timeout=_QUERY_TIMEOUT
            )
        except (WorkflowQueryFailedError, RPCError) as exc:
            raise RunnerNotAnswering(
                f"task {task_id!r} is running, but no runner answered for its receipt so far "
                f"({exc}); check that `landed worker runner` is up on the task queue "
                f"{desc.task_queue!r} and not stalled (its log)"
            ) from exc
        if answer.settled:
            return answer.receipt
        return answer.receipt.model_copy(update={"settled_at": None})

    async def _from_ledger(self, task_id: str, not_found: RPCError) -> Receipt:
        """The receipt the runner's ledger holds for a task Temporal does not know (any more).

        The client holds no ledger credentials: a runner reads it, in a short workflow of its
        own. ``not_found`` is raised again when the ledger holds nothing for the id either. The
        receipt is the ledger's latest under the id; a receipt settled before spec digests
        existed cannot show which spec it is of.
        """
        try:
            out: LookupOutput = await self._temporal.execute_workflow(
                LOOKUP_WORKFLOW,
                LookupInput(task_id=task_id),
                id=f"landed-lookup-{uuid.uuid4().hex}",
                task_queue=self._task_queue,
                result_type=LookupOutput,
                execution_timeout=self._lookup_timeout,
            )
        except WorkflowFailureError as exc:
            if isinstance(exc.cause, TemporalTimeoutError):
                raise RunnerNotAnswering(
                    f"Temporal holds no run of task {task_id!r} (dropped after its retention, or "
                    f"never submitted), and no runner read its receipt from the ledger within "
                    f"{self._lookup_timeout.total_seconds():g} s; check that `landed worker "
                    f"runner` of this release (older ones do not run {LOOKUP_WORKFLOW}) is up on "
                    f"the task queue {self._task_queue!r}"
                ) from exc
            raise LedgerError(
                f"Temporal holds no run of task {task_id!r}, and the runner on the task queue "
                f"{self._task_queue!r} could not read its receipt from the ledger "
                f"({exc.cause or exc}); see that runner's log"
            ) from exc
        if out.receipt is None:
            raise not_found
        return out.receipt

    # --- loops (GOV-9): the logic lives in landed.temporal.loops ---------------------------

    async def create_loop(self, loop: Any, *, schedule: bool = True, paused: bool = False) -> None:
        """Declare a loop (a LoopSpec or its mapping): its Schedule (created paused with
        ``paused``; none with ``schedule=False``: agents start its tasks with ``loop`` set) and
        its tripwire. LoopExists when it is declared already; ValidationError for bad input."""
        from landed.loops.spec import LoopSpec
        from landed.temporal.loops import create_loop

        spec = loop if isinstance(loop, LoopSpec) else LoopSpec.model_validate(loop)
        await create_loop(self._temporal, self._task_queue, spec, schedule=schedule, paused=paused)
