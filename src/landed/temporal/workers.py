"""The three worker roles, each built from its own settings over its own Temporal connection."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Interceptor, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from landed.probes.sources import SourceRegistry, load_registry

if TYPE_CHECKING:
    from landed.ledger.base import Ledger
    from landed.ledger.chain import HeadSigner
    from landed.task.claim_contracts import ClaimContracts
    from landed.task.trust import ApproverTrust
    from landed.telemetry.health import ReadyCheck
    from landed.telemetry.worker_metrics import WorkerMetrics
    from landed.temporal.witness import WitnessSender
from landed.task.messages import Routing
from landed.task.names import SEARCH_ATTRIBUTES
from landed.telemetry import logs, tracing
from landed.temporal import registry as roles
from landed.temporal.plugin import connect, strict_workflow_runner
from landed.temporal.settings import ActorSettings, RoleSettings, RunnerSettings, VerifierSettings
from landed.temporal.versioning import (
    VersioningError,
    bootstrap,
    deployment_config,
    role_version,
)

__all__ = [
    "ROLES",
    "RoleError",
    "actor_env_problems",
    "build_worker",
    "check_settings",
    "confine",
    "ensure_search_attributes",
    "private_to_owner",
    "read_pems",
    "run_role",
    "settings_for",
]

ROLES = ("actor", "verifier", "runner")


class RoleError(RuntimeError):
    """A role cannot start as configured; the message names the setting to fix."""


def private_to_owner(path: Path) -> None:
    """The signing key is readable by its owner only: whoever else can read it can sign a
    reading the verifier never made (as ssh refuses a private key others can read)."""
    from landed.signing import SigningError

    try:
        mode = path.stat().st_mode
    except OSError:
        return  # KeyPair.load names the problem
    if os.name == "posix" and mode & 0o077:
        raise SigningError(
            f"the signing key {path} can be read by others (mode {mode & 0o777:o}); "
            f"chmod 600 {path}"
        )


def actor_env_problems(environ: Mapping[str, str]) -> list[str]:
    """Other roles' secrets in the actor's environment, by name: an act could read them."""
    return sorted(
        name
        for name in environ
        if name.upper().startswith("LANDED_SOURCES__")
        or name.upper()
        in {"LANDED_VERIFIER_SIGNING_KEY", "LANDED_LEDGER_URL", "LANDED_RUNNER_LEDGER_URL"}
    )


async def _namespace_exists(client: Client) -> None:
    """The worker's namespace is served: the SDK would find out only after "ready" was said."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace)
        )
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise RoleError(
            f"namespace {client.namespace!r} does not exist on "
            f"{client.service_client.config.target_host}; create it (temporal operator "
            f"namespace create --namespace {client.namespace}) or set TEMPORAL_NAMESPACE"
        ) from None


async def ensure_search_attributes(client: Client) -> None:
    """Register landed's Keyword search attributes on the namespace if they are missing.

    A cluster that refuses (no operator permission, Temporal Cloud) gets a message with the
    command to run once, instead of workflows that fail on their first upsert.
    """
    namespace = client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        if exc.status not in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED):
            raise
        # Not allowed to look (a namespace-scoped principal, Temporal Cloud): that says nothing
        # about whether they are registered. Start, and say what to do if workflows fail.
        cmd = " ".join(f"--name {n} --type Keyword" for n in SEARCH_ATTRIBUTES)
        print(
            f"landed: could not list search attributes on namespace {namespace!r} ({exc}); "
            f"if tasks fail on them, register them once: temporal operator search-attribute "
            f"create --namespace {namespace} {cmd}",
            file=sys.stderr,
        )
        return
    try:
        missing = [n for n in SEARCH_ATTRIBUTES if n not in listed.custom_attributes]
        if missing:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace,
                    search_attributes={
                        n: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for n in missing
                    },
                )
            )
    except Exception as exc:
        cmd = " ".join(f"--name {n} --type Keyword" for n in SEARCH_ATTRIBUTES)
        raise RoleError(
            f"search attributes {', '.join(SEARCH_ATTRIBUTES)} are not registered on namespace "
            f"{namespace!r} and could not be added ({exc}); run once: "
            f"temporal operator search-attribute create --namespace {namespace} {cmd}"
        ) from exc


def read_pems(paths: list[Path]) -> list[str]:
    from landed.signing import TrustStore

    TrustStore.load(paths)  # validates every file, naming the bad one
    pems: list[str] = []
    for path in paths:
        files = sorted(path.glob("*.pub")) if path.is_dir() else [path]
        pems.extend(f.read_text() for f in files)
    return pems


# What build_worker returns: the role's Worker, the facts it prints when ready, and an async
# cleanup (or None).
Built = tuple[Worker, dict[str, Any], Callable[[], Awaitable[None]] | None]


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
    return worker, view, None


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
    return worker, view, registry.aclose


async def _runner_worker(
    settings: RunnerSettings,
    client: Client,
    identity: str,
    view: dict[str, Any],
    interceptors: Sequence[Interceptor],
    checks: dict[str, ReadyCheck],
) -> Built:
    from landed.ledger.factory import open_ledger

    routing = _routing(settings, identity, read_pems(settings.trust)).model_copy(
        update={"approval": _approvers(settings)}
    )
    await ensure_search_attributes(client)
    contracts = claim_contracts(settings)
    signer = _head_signer(settings)
    ledger = await open_ledger(settings.ledger_url, signer=signer)
    witness = _witness(settings, client, signer)
    work = roles.runner(ledger, routing, contracts)
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

    # The chain walk the runner's reads vouch by, done once now in the background (a budget
    # at a time): the lookups and catch-ups that follow find it warm, whatever the ledger's
    # size, instead of each walking its share inside its own time limit.
    warm = asyncio.get_running_loop().create_task(_walk_chain(ledger))

    async def close() -> None:
        warm.cancel()
        await asyncio.gather(warm, return_exceptions=True)
        await ledger.close()  # signs the last head, which the witness is then given
        if witness is not None:
            await witness.close()

    return worker, view, close


async def _walk_chain(ledger: Ledger) -> None:
    from landed.ledger.base import LedgerError

    try:
        await ledger.walk_chain()
    except LedgerError as exc:  # the reads walk on by themselves, and say what failed
        logging.getLogger(__name__).warning("the ledger's chain walk at start stopped: %s", exc)


def _witness(
    settings: RunnerSettings, client: Client, signer: HeadSigner | None
) -> WitnessSender | None:
    """The sender of each signed head to the ledger's witness (one per head key)."""
    if signer is None or not settings.witness:
        return None
    from landed.ledger.witness import witness_id
    from landed.temporal.witness import WitnessSender

    pem = signer.key.public_pem().decode()
    sender = WitnessSender(client, witness_id(signer.key.key_id), settings.task_queue, pem)
    signer.on_signed = sender.offer
    return sender


def _approvers(settings: RunnerSettings) -> ApproverTrust:
    """The approver keys the runner trusts (GOV-5), checked apart from every other role's."""
    from landed.signing import SigningError, TrustStore
    from landed.temporal.approver_keys import load_approvers

    try:
        return load_approvers(settings, TrustStore.load(settings.trust).keys())
    except SigningError as exc:
        raise RoleError(str(exc)) from exc


def claim_contracts(settings: RunnerSettings) -> ClaimContracts | None:
    """The operator's claim contracts, linted: a contract a bad write would pass stops the
    runner before it judges a claim by it."""
    if settings.claim_contracts is None:
        return None
    from landed.task.claim_contracts import ContractsError
    from landed.task.claim_contracts_lint import load_claim_contracts

    try:
        return load_claim_contracts(settings.claim_contracts)
    except ContractsError as exc:
        raise RoleError(f"LANDED_RUNNER_CLAIM_CONTRACTS: {exc}") from exc


def _head_signer(settings: RunnerSettings) -> HeadSigner | None:
    """The runner's chain-head key (its own, never the verifier's) and when to sign."""
    if settings.head_key is None:
        return None
    from landed.ledger.chain import HeadSigner
    from landed.signing import KeyPair, SigningError, TrustStore

    try:
        key = KeyPair.load(settings.head_key)
        verifier_keys = TrustStore.load(settings.trust)
    except SigningError as exc:
        raise RoleError(f"LANDED_RUNNER_HEAD_KEY: {exc}") from exc
    if key.key_id in verifier_keys:
        # The runner would then hold the verifier's signing key, and could sign readings.
        raise RoleError(
            f"LANDED_RUNNER_HEAD_KEY {settings.head_key} is the verifier's key (key id "
            f"{key.key_id}, trusted in LANDED_RUNNER_TRUST); the runner never holds the "
            "verifier's key: make it a key of its own with `landed keys new`"
        )
    return HeadSigner(
        key,
        every=settings.head_every,
        interval_s=settings.head_interval_s,
        foreign_after=settings.head_foreign_after_s,
    )


def _routing(settings: RunnerSettings, identity: str, pems: list[str]) -> Routing:
    """Where the runner's workflows send each step, and the verifier keys they trust."""
    return Routing(
        actor_task_queue=settings.actor_task_queue,
        verifier_task_queue=settings.verifier_task_queue,
        runner=identity,
        trusted_keys=pems,
        pre_read=settings.pre_read,
        task_may_skip_pre_read=settings.task_may_skip_pre_read,
        confirm_reads=settings.confirm_reads,
        time_cap=settings.time_cap,
        # --- fleet ---
        actor_pool=settings.actor_pool,
        verify_usd_per_second=settings.verify_usd_per_second,
    )


def check_settings(settings: RoleSettings) -> None:
    """What a role's settings must hold that needs no connection: a role refuses before it
    connects, so a missing key or trust is named even where Temporal is unreachable."""
    try:
        role_version(settings)  # a bad deployment name or build id, before any connection
    except VersioningError as exc:
        raise RoleError(str(exc)) from None
    if isinstance(settings, ActorSettings):
        settings.check_separation()
    if isinstance(settings, VerifierSettings):
        settings.check_separation()
        if settings.signing_key is None:
            raise RoleError(
                "the verifier has no signing key, so nothing it reads could be proven "
                "offline; make one with `landed keys new` and set "
                "LANDED_VERIFIER_SIGNING_KEY to its .key file"
            )
    if isinstance(settings, RunnerSettings):
        if not settings.trust:
            raise RoleError(
                "the runner trusts no verifier key, so no task could ever be verified; set "
                "LANDED_RUNNER_TRUST to the verifier's .pub file (from `landed keys new`)"
            )
        _head_signer(settings)  # a bad or borrowed head key is refused before connecting
        _approvers(settings)  # so is a bad or borrowed approver key
        claim_contracts(settings)  # so is a claim contract a bad write would pass
        if settings.verifier_task_queue == settings.actor_task_queue:
            raise RoleError(
                "LANDED_RUNNER_VERIFIER_TASK_QUEUE equals LANDED_RUNNER_ACTOR_TASK_QUEUE; the "
                "verify step must run on the verifier's own queue"
            )


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


def settings_for(role: str) -> RoleSettings:
    if role == "actor":
        return ActorSettings()
    if role == "verifier":
        return VerifierSettings()
    if role == "runner":
        return RunnerSettings()
    raise RoleError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")


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
        await _namespace_exists(client)
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
