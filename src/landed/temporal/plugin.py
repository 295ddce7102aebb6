"""The one Temporal plugin every landed client and worker goes through, and how they connect.

The plugin sets the pydantic data converter and shares landed's deterministic code with the
workflow sandbox; it does both through the SDK's public plugin API, as Temporal's own plugins do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.runtime import Runtime
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from landed.telemetry import tracing
from landed.temporal.connection import ConnectionSettingsError, connect_options, worker_identity

__all__ = [
    "NOT_SHARED",
    "PLUGIN_NAME",
    "SANDBOX_PASSTHROUGH",
    "ConnectionSettingsError",
    "connect",
    "connect_options",
    "landed_plugin",
    "strict_workflow_runner",
    "worker_identity",
]

PLUGIN_NAME = "landed"
# Where landed's workflow code lives (workflows/, installed under this name).
_WORKFLOW_PACKAGE = "landed.workflows"

# Modules the workflow sandbox shares with the worker instead of re-importing per run. Each is
# deterministic (no I/O, no clock, no randomness at import or in what workflow code calls) and
# keeps no per-workflow state at module level, so sharing it cannot leak one workflow's state
# into another; re-importing them per run would cost milliseconds per workflow task, and with
# max_cached_workflows=0 per activation.
SANDBOX_PASSTHROUGH: tuple[str, ...] = (
    # pydantic builds validators at class creation; re-importing it per run is slow, and the
    # pydantic data converter hands the workflow instances of the worker's own classes. (The
    # SDK's defaults share pydantic too; listed so landed does not depend on them.)
    "pydantic",
    "pydantic_core",
    # pydantic's runtime dependencies, imported with it.
    "annotated_types",
    "typing_inspection",
    "typing_extensions",
    # JSON encoding used by landed's models; a C extension that must not be loaded twice.
    "orjson",
    # Imported by landed's settings modules; pure configuration code.
    "pydantic_settings",
    # Signature checks in the workflow (Ed25519 verification is deterministic); a compiled
    # extension that cannot be imported twice in one process.
    "cryptography",
    # landed's pure models: TaskSpec and the step inputs cross the workflow boundary, so the
    # workflow must see the very classes the converter instantiates.
    "landed.task.spec",
    "landed.receipts.model",
    "landed.probes.contract",
    "landed.receipts.ladder",
    # The grading code the checker uses; the workflow computes the verdict with it. Pure.
    "landed.receipts.grading",
    # Receipt assembly from spec, act report and proof items. Pure.
    "landed.task.assemble",
    # Verifying the verifier's signatures against the runner's trusted keys. Pure.
    "landed.signing",
    # landed's own workflow code (AgentTask, ReceiptLookup). Re-imported per run, its class
    # body and the inspection @workflow.defn makes of it cost the runner about 3 ms of CPU per
    # task (measured: an eighth of its CPU). Its module level holds only constants, and no
    # code in it writes to them (tested); each run's state lives on its instance, so one copy
    # serves every run. What sharing gives up: a call the sandbox would stop (datetime.now,
    # random) made from this module's own code is not stopped at run time. The test suite
    # therefore runs its in-process runners, and replays every recorded history, under the
    # SDK's sandbox with this module re-imported as the SDK does by default
    # (strict_workflow_runner; a runner's LANDED_RUNNER_SANDBOX=strict), where such a call
    # fails the workflow task.
    _WORKFLOW_PACKAGE,
)

# The rest of landed's core, room by room (a test fails when a room is added and not listed).
# Under the strict runner the workflow module is re-imported per run; the rooms it imports
# (probes, receipts, signing, task, governance, loops) are shared so each run does not execute them
# again. Every room is shared, not only those: the house plan (make layers) keeps each from
# importing workflows or activities, none does I/O or keeps run state at import, and workflow
# code calls none of their I/O, so no room can bring a second, sandboxed copy of the core into
# a run.
_CORE_ROOMS: tuple[str, ...] = (
    "landed.cli",
    "landed.dev",
    "landed.governance",
    "landed.ledger",
    "landed.loops",
    "landed.probes",
    "landed.receipts",
    "landed.signing",
    "landed.task",
    "landed.telemetry",
    "landed.temporal",
    "landed.util",
)

# Rooms never shared: landed's workflow code never imports them. The agents room brings the
# agent frameworks (mcp, pydantic-ai, the OpenAI Agents SDK), whose import-time state a sandbox
# has no business sharing; a user's own workflow that starts a task as its child imports
# landed.agents.temporal under workflow.unsafe.imports_passed_through(), its own choice (see
# docs/agents.md). Workflows and activities are the sandboxed code itself.
NOT_SHARED: tuple[str, ...] = ("landed.agents", "landed.workflows", "landed.activities")


class _StrictRunner(SandboxedWorkflowRunner):
    """The SDK's sandbox runner, marked as asked for by name so the plugin leaves it as it is."""


def _shared_runner(existing: WorkflowRunner | None) -> WorkflowRunner:
    """The worker's or replayer's runner with landed's passthrough modules added to its sandbox."""
    if isinstance(existing, _StrictRunner):
        return existing  # asked for by name (the runner's sandbox=strict): share nothing more
    runner = existing if existing is not None else SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner  # an unsandboxed runner shares every module already
    restrictions = runner.restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH, *_CORE_ROOMS)
    return dataclasses.replace(runner, restrictions=restrictions)


def strict_workflow_runner() -> WorkflowRunner:
    """The sandbox with landed's workflow code re-imported for every run, as the SDK does by
    default, so its restricted standard library stops any nondeterministic call that code
    makes. Workers share that code unless their settings say sandbox=strict; the test suite's
    in-process runners and its replay of recorded histories run under this one."""
    strict = (m for m in SANDBOX_PASSTHROUGH if m != _WORKFLOW_PACKAGE)
    restrictions = SandboxedWorkflowRunner().restrictions.with_passthrough_modules(
        *strict, *_CORE_ROOMS
    )
    return _StrictRunner(restrictions=restrictions)


def landed_plugin() -> SimplePlugin:
    """The plugin: the pydantic data converter, landed's modules shared with the sandbox and,
    when this process configured tracing (landed.telemetry.tracing), Temporal's tracing
    interceptor on the client, its workers and replayers: one trace from the submission
    through the workflow and every role. Workflow spans are made only outside replay."""
    traced = tracing.interceptor()
    return SimplePlugin(
        PLUGIN_NAME,
        data_converter=pydantic_data_converter,
        workflow_runner=_shared_runner,
        interceptors=[traced] if traced is not None else None,
    )


async def connect(
    *,
    identity: str,
    address: str | None = None,
    namespace: str | None = None,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_plugins: Sequence[SimplePlugin] = (),
    runtime: Runtime | None = None,
) -> Client:
    """Client.connect through the landed plugin; workers built on this client inherit it.
    ``runtime``: the SDK runtime to use (a role's, when it serves metrics)."""
    opts = connect_options(address=address, namespace=namespace, profile=profile, env=env)
    return await Client.connect(
        plugins=[landed_plugin(), *extra_plugins], identity=identity, runtime=runtime, **opts
    )
