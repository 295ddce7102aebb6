"""landed's answers to an agent, over ``landed.Client``: one method per tool, each returning
text that starts with DONE or NOT DONE and the why. The MCP server and the framework tools
call these; none of them can approve (approvals are a person's, signed with their key)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from temporalio.service import RPCError, RPCStatusCode

from landed.agents import words
from landed.agents.intent import Intent, IntentError, intent_task
from landed.ledger.base import LedgerError
from landed.task.claim_contracts import ClaimContracts
from landed.task.spec import TaskSpec
from landed.temporal.client import Client
from landed.temporal.client_errors import NamespaceNotReady, RunnerNotAnswering, TaskNotSettled

__all__ = ["DEFAULT_WAIT_S", "MAX_WAIT_S", "AgentToolError", "LandedTools"]

log = logging.getLogger("landed.agents")

#: How long ``run`` waits for the verdict unless told; at most MAX_WAIT_S.
DEFAULT_WAIT_S = 300.0
MAX_WAIT_S = 3600.0

# landed's own refusals: each message already names the fix.
_REFUSALS = (
    ValueError,  # TaskSpecError, TaskIdReused, TaskRefused (role check)
    TaskNotSettled,
    NamespaceNotReady,
    RunnerNotAnswering,
    LedgerError,
)


class AgentToolError(Exception):
    """Bad input or a refusal, for the agent to read and fix: its message names the fix."""


class LandedTools:
    """The tools' logic over one ``landed.Client``.

    ``owner`` is the agent every task of ``act`` is owned by; ``contracts`` the operator's
    named contracts an act may be read back by; ``own_plans=False`` refuses a proof plan the
    model writes itself (only the operator's contracts then)."""

    def __init__(
        self,
        client: Client,
        *,
        owner: str = "agent",
        contracts: ClaimContracts | None = None,
        own_plans: bool = True,
    ) -> None:
        self.client = client
        self.owner = owner
        self.contracts = contracts
        self.own_plans = own_plans

    async def submit(self, task: str | Mapping[str, Any] | TaskSpec) -> str:
        """Start a task without waiting; its id."""
        async with _refusals("submit"):
            handle = await self.client.start(task)
        how = "was already submitted" if handle.existing else "is submitted"
        return (
            f"NOT DONE: task {handle.task_id} {how} and has not been read back yet; ask status "
            f"or receipt with its id.\ntask: {handle.task_id}"
        )

    async def status(self, task_id: str) -> str:
        """The task's step while it runs; once settled, its verdict and why."""
        async with _refusals("status", task_id):
            status = await self.client.status(task_id)
            if status.settled:
                return words.receipt_text(await self.client.receipt(task_id))
        return words.status_text(status)

    async def receipt(self, task_id: str) -> str:
        async with _refusals("receipt", task_id):
            return words.receipt_text(await self.client.receipt(task_id), with_json=True)

    async def run(
        self, task: str | Mapping[str, Any] | TaskSpec, timeout_s: float = DEFAULT_WAIT_S
    ) -> str:
        """Start a task (or attach to it) and wait, at most ``timeout_s``, for its verdict."""
        wait = _bounded(timeout_s)
        async with _refusals("run"):
            handle = await self.client.start(task)
            try:
                receipt = await asyncio.wait_for(handle.result(), wait)
            except TimeoutError:
                return (
                    f"NOT DONE: task {handle.task_id} has not settled within {wait:g} s; it "
                    f"runs on: ask status or receipt with its id.\ntask: {handle.task_id}"
                )
        return words.receipt_text(receipt)

    async def act(
        self, intent: Intent | Mapping[str, Any], timeout_s: float = DEFAULT_WAIT_S
    ) -> str:
        """The framework tools' one call: the intended action as a task, run to its verdict."""
        try:
            spec = intent_task(
                intent, owner=self.owner, contracts=self.contracts, own_plans=self.own_plans
            )
        except IntentError as exc:
            raise AgentToolError(f"the action was not started: {exc}") from None
        return await self.run(spec, timeout_s)

    async def held(self) -> str:
        async with _refusals("held"):
            return words.held_text(await self.client.held())

    async def request_approval(self, task_id: str, reason: str = "", by: str = "") -> str:
        """Say who should approve a held task, and log the request; never approves."""
        async with _refusals("request_approval", task_id):
            waiting = {t.task_id: t for t in await self.client.held()}
        task = waiting.get(task_id)
        if task is None:
            raise AgentToolError(
                f"task {task_id!r} is not waiting for approval; ask held for the tasks that "
                "wait, or status for where this one stands"
            )
        log.warning(
            "approval requested for task %s by %s (%s); who may approve: %s",
            task_id,
            by or self.owner,
            reason or "no reason given",
            task.approvers or "?",
        )
        return words.request_text(task, reason)


def _bounded(timeout_s: float) -> float:
    if not 0 < timeout_s <= MAX_WAIT_S:
        raise AgentToolError(
            f"timeout_s must be above 0 and at most {MAX_WAIT_S:g} seconds, not {timeout_s!r}"
        )
    return float(timeout_s)


@asynccontextmanager
async def _refusals(tool: str, task_id: str | None = None) -> AsyncIterator[None]:
    """landed's refusals and an unknown task as AgentToolError; anything else is a defect."""
    try:
        yield
    except _REFUSALS as exc:
        raise AgentToolError(f"{tool}: {exc}") from None
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND and task_id is not None:
            raise AgentToolError(
                f"{tool}: no task {task_id!r} is known to Temporal or the runner's ledger; check "
                "the id (submit returns it)"
            ) from None
        raise AgentToolError(f"{tool}: Temporal refused the request ({exc.message})") from None
