"""The three worker roles, each built from its own settings over its own Temporal connection."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from landed.probes.sources import SourceRegistry, load_registry
from landed.task.checkable import check_queue

if TYPE_CHECKING:
    from landed.telemetry.health import ReadyCheck
    from landed.telemetry.worker_metrics import WorkerMetrics
from landed.telemetry import logs, tracing
from landed.temporal import registry as roles
from landed.temporal.plugin import connect, strict_workflow_runner
from landed.temporal.role_setup import (
    RoleError,
    approvers,
    check_settings,
    claim_contracts,
    ensure_search_attributes,
    head_signer,
    namespace_exists,
    private_to_owner,
    read_pems,
    routing,
    settings_for,
    walk_chain,
    witness_sender,
)
from landed.temporal.settings import ActorSettings, RoleSettings, RunnerSettings, VerifierSettings
from landed.temporal.versioning import (
    VersioningError,
    bootstrap,
    deployment_config,
    role_version,
)

__all__ = ["CHECK_SLOTS", "RoleWorkers", "build_worker", "confine", "run_role"]

#: Slots of a role's check worker: an answer is a lookup, so a few serve many asks at once.
CHECK_SLOTS = 20


class RoleWorkers:
    """A role's Worker on its task queue and its check Worker on its role check queue, started
    and shut down together: one process, one identity, one connection. The check Worker has
    slots of its own, so a role whose task slots are all taken (long acts, long reads, many
    tasks) still answers the role check at once."""

    def __init__(self, work: Worker, check: Worker) -> None:
        self.work, self.check = work, check
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> RoleWorkers:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.work)
            await stack.enter_async_context(self.check)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


# What build_worker returns: the role's Workers, the facts it prints when ready, and an async
# cleanup (or None).
Built = tuple[RoleWorkers, dict[str, Any], Callable[[], Awaitable[None]] | None]


def _check_worker(
    client: Client, settings: RoleSettings, identity: str, work: roles.RoleWork, **more: Any
) -> Worker:
    """The role's check Worker: its answers to the role check, on ``check_queue``, under the
    role's identity and deployment version (so the version that runs its tasks answers)."""
    assert work.checks is not None  # every role's RoleWork names its answers
    return Worker(
        client,
        task_queue=check_queue(settings.task_queue),
        workflows=work.checks.workflows,
        activities=work.checks.activities,
        identity=identity,
        deployment_config=deployment_config(settings),
        max_concurrent_activities=CHECK_SLOTS,
        max_concurrent_local_activities=CHECK_SLOTS,
        max_concurrent_workflow_tasks=CHECK_SLOTS,
        **more,
    )


async def build_worker(
    settings: RoleSettings,
    client: Client,
    identity: str,
    *,
    registry: SourceRegistry | None = None,
    interceptors: Sequence[Interceptor] = (),
    checks: dict[str, ReadyCheck] | None = None,
) -> Built:
    """The Worker for a role, the facts it prints when ready, and an async cleanup (or None).

    The verifier's sources come from its own settings (LANDED_SOURCES__*, landed.toml) unless
    ``registry`` is given (embedding, tests). ``interceptors`` join the runner's worker, after
    those the plugin installs (embedding, tests). ``checks`` receives the role's own readiness
    checks (the verifier's key, the runner's ledger) for ``/readyz``.
    """
    view = {**settings.public_view(), "identity": identity}
    checks = {} if checks is None else checks
    if isinstance(settings, ActorSettings):
        return _actor_worker(settings, client, identity, view)
    check_settings(settings)
    if isinstance(settings, VerifierSettings):
        return _verifier_worker(settings, client, identity, view, registry, checks)
    if isinstance(settings, RunnerSettings):
        return await _runner_worker(settings, client, identity, view, interceptors, checks)
    raise RoleError(f"unknown role settings {type(settings).__name__}")


def _actor_worker(
    settings: ActorSettings, client: Client, identity: str, view: dict[str, Any]
) -> Built:
    acts = roles.actor_acts(settings.acts)
    view["acts"] = sorted(acts)
    threads = settings.act_threads or settings.max_concurrent_activities
    work = roles.actor(acts, settings.credentials, identity, threads=threads)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        activities=work.activities,
        identity=identity,
        deployment_config=deployment_config(settings),
        max_concurrent_activities=settings.max_concurrent_activities,
        graceful_shutdown_timeout=timedelta(seconds=settings.graceful_shutdown_s),
    )
    return RoleWorkers(worker, _check_worker(client, settings, identity, work)), view, None


def _verifier_worker(
    settings: VerifierSettings,
    client: Client,
    identity: str,
    view: dict[str, Any],
    registry: SourceRegistry | None,
    checks: dict[str, ReadyCheck],
) -> Built:
    from landed.signing import KeyPair, redact_key

    assert settings.signing_key is not None  # check_settings
    private_to_owner(settings.signing_key)
    key = KeyPair.load(settings.signing_key)
    if registry is None:
        registry = load_registry(role="verifier", allow_unsourced=False)
    # The key itself stays out of evidence whatever a probe prints (the registry already
    # redacts every configured source credential).
    redact_key(registry, key, settings.signing_key)
    view["key_id"] = key.key_id

    async def key_loaded() -> str | None:
        # Loaded once at start and held: the check says the worker signs with a real key.
        return None if key.key_id else "not loaded"

    checks["signing_key"] = key_loaded
    view["sources"] = sorted(registry.names())
    work = roles.verifier(registry, identity, key)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        activities=work.activities,
        identity=identity,
        deployment_config=deployment_config(settings),
        max_concurrent_activities=settings.max_concurrent_activities,
    )
    check = _check_worker(client, settings, identity, work)
    return RoleWorkers(worker, check), view, registry.aclose


async def _runner_worker(
    settings: RunnerSettings,
    client: Client,
    identity: str,
    view: dict[str, Any],
    interceptors: Sequence[Interceptor],
    checks: dict[str, ReadyCheck],
) -> Built:
    from landed.ledger.factory import open_ledger

    route = routing(settings, identity, read_pems(settings.trust)).model_copy(
        update={"approval": approvers(settings)}
    )
    await ensure_search_attributes(client)
    contracts = claim_contracts(settings)
    signer = head_signer(settings)
    ledger = await open_ledger(settings.ledger_url, signer=signer)
    witness = witness_sender(settings, client, signer)
    work = roles.runner(ledger, route, contracts)
    fleet = roles.fleet(client, settings.fleet_id)
    view["ledger"] = ledger.url

    async def ledger_answers() -> str | None:
        # One indexed lookup of a task id no task has: a read the ledger must answer.
        await ledger.latest("landed-readyz")
        return None

    checks["ledger"] = ledger_answers
    # The SDK's default sandbox becomes the plugin's, which shares landed's workflow module
    # across runs; the strict one re-imports it for every run.
    sandbox = (
        strict_workflow_runner() if settings.sandbox == "strict" else SandboxedWorkflowRunner()
    )
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[*work.workflows, *fleet.workflows],
        activities=[*work.activities, *fleet.activities],
        identity=identity,
        deployment_config=deployment_config(settings),
        max_cached_workflows=settings.max_cached_workflows,
        max_concurrent_local_activities=settings.max_concurrent_activities,
        # plan, claim, settle and lookup run as local activities; the fleet gate (which waits
        # for a paused switch, and must not hold a workflow task while it does) is the one
        # activity the runner's queue serves.
        workflow_runner=sandbox,
        interceptors=list(interceptors),
    )
    check = _check_worker(
        client, settings, identity, work, workflow_runner=sandbox, interceptors=list(interceptors)
    )

    # The chain walk the runner's reads vouch by, done once now in the background (a budget
    # at a time): the lookups and catch-ups that follow find it warm, whatever the ledger's
    # size, instead of each walking its share inside its own time limit.
    warm = asyncio.get_running_loop().create_task(walk_chain(ledger))

    async def close() -> None:
        warm.cancel()
        await asyncio.gather(warm, return_exceptions=True)
        await ledger.close()  # signs the last head, which the witness is then given
        if witness is not None:
            await witness.close()

    return RoleWorkers(worker, check), view, close


def _wire_readiness(metrics: WorkerMetrics, client: Client, checks: dict[str, ReadyCheck]) -> None:
    """/readyz asks Temporal through the role's own connection, then the role's checks."""
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    async def temporal_answers() -> str | None:
        # The call every client makes on connect: allowed on a cluster and on Temporal Cloud.
        await client.workflow_service.get_system_info(
            GetSystemInfoRequest(), retry=False, timeout=timedelta(seconds=2)
        )
        return None

    metrics.readiness.temporal(temporal_answers)
    for name, check in checks.items():
        metrics.readiness.add(name, check)


def confine(role: str, settings: RoleSettings) -> None:
    """The role makes itself unreadable to, or confined away from, the other roles on one
    machine (landed.util.confine; LANDED_<ROLE>_CONFINE)."""
    from landed.util.confine import ConfineError, confine_role

    credentials = settings.credentials if isinstance(settings, ActorSettings) else {}
    try:
        confine_role(role, os.environ, credentials)
    except ConfineError as exc:
        raise RoleError(str(exc)) from None


async def run_role(
    role: str,
    *,
    stop: asyncio.Event,
    on_ready: Callable[[dict[str, Any]], None],
    address: str | None = None,
    namespace: str | None = None,
) -> None:
    """Connect as the role, run its worker until ``stop`` is set, then shut down cleanly."""
    settings = settings_for(role)
    identity = settings.resolved_identity()
    check_settings(settings)  # before any connection: refuse early, and say why
    # Before any thread, connection or act import: Landlock binds the threads to come.
    confine(role, settings)
    registry = None
    if isinstance(settings, VerifierSettings):
        # A bad source is named even where Temporal is unreachable.
        registry = load_registry(role="verifier", allow_unsourced=False)
    logs.configure(role=role)
    # Before the connection: the plugin puts the tracing interceptor on it when this is on.
    traced = tracing.configure(f"landed-{role}") is not None
    # The role's metrics port, when set: the SDK's metrics and the role's health on one page.
    metrics = None
    if settings.metrics_port:
        from landed.telemetry.worker_metrics import WorkerMetrics  # aiohttp: only when asked

        metrics = WorkerMetrics(
            role,
            settings.metrics_port,
            settings.metrics_host,
            ready_within_s=settings.ready_within_s,
        )
    metrics_url = await metrics.start() if metrics is not None else None
    try:
        runtime = metrics.runtime if metrics is not None else None
        client = await connect(
            identity=identity, address=address, namespace=namespace, runtime=runtime
        )
        await namespace_exists(client)
        checks: dict[str, ReadyCheck] = {}
        worker, view, cleanup = await build_worker(
            settings, client, identity, registry=registry, checks=checks
        )
        if metrics is not None:
            _wire_readiness(metrics, client, checks)
        view["address"] = client.service_client.config.target_host
        view["namespace"] = client.namespace
        view["tracing"] = tracing.protocol() if traced else "off"
        if metrics_url is not None:
            view["metrics"] = metrics_url
        async with worker:
            # Versioned: once it polls, a first release makes its version current (see
            # landed.temporal.versioning); "ready" then means its queue dispatches.
            version = role_version(settings)
            if version is not None:
                try:
                    view["versioning"] = await bootstrap(client, version, identity=identity)
                except VersioningError as exc:
                    raise RoleError(str(exc)) from None  # exit 3, the message names the fix
            if metrics is not None:
                metrics.polling()
            on_ready(view)
            await stop.wait()
            if metrics is not None:
                metrics.readiness.polling = False  # draining: no longer ready
        if cleanup is not None:
            await cleanup()
    finally:
        if metrics is not None:
            await metrics.stop()
        # Spans still buffered are exported before the process goes (a blocking flush).
        await asyncio.to_thread(tracing.shutdown)
