"""Worker versioning: each role's worker is one version of its Temporal Worker Deployment.

A role's deployment is named ``landed-<role>`` (LANDED_<ROLE>_DEPLOYMENT_NAME overrides it) and
its version is the build id: LANDED_BUILD_ID, else the installed landed version. landed's
workflows are pinned, so a task runs to its end on the build that started it and a release
that changes the workflow's commands needs no drain.

With versioning on, a task queue dispatches nothing until its deployment has a current version.
A worker whose deployment never had one makes its own version current (the first release
bootstraps itself); every later version waits for ``landed deploy promote``.
"""

from __future__ import annotations

import asyncio
import re
import time
from importlib.metadata import PackageNotFoundError, version

from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    DescribeWorkerDeploymentResponse,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from landed.temporal.settings import RoleSettings

__all__ = [
    "PLACEHOLDER_BUILD_ID",
    "UNVERSIONED",
    "WORKFLOWS_PINNED",
    "VersioningError",
    "bootstrap",
    "current_build_id",
    "default_build_id",
    "deployment_config",
    "deployment_name",
    "describe_deployment",
    "has_version",
    "role_version",
]

# How landed's workflows move between versions: never, a task ends on the build that started
# it. Given as the versioned worker's default, not on each @workflow.defn: the SDK (1.35) sends a
# declared behaviour from an unversioned worker too, and the server refuses that workflow task
# ("versioning behavior cannot be specified without deployment options being set with
# versioned mode"), which would stop every task of `landed dev` and of LANDED_<ROLE>_VERSIONING
# =false workers.
WORKFLOWS_PINNED = VersioningBehavior.PINNED
# What deploy/k8s/base puts in LANDED_BUILD_ID until the operator sets the release's own.
PLACEHOLDER_BUILD_ID = "set-per-release"
# How the server names "no version": the unversioned workers (routing_config.current_version).
UNVERSIONED = "__unversioned__"
# Temporal splits "<deployment>.<build id>" at the first dot, and bounds a build id.
# The Worker Controller names a deployment "<k8s namespace>/<name>", hence the slash.
_NAME = re.compile(r"^[A-Za-z0-9_\-/]{1,200}$")
_BUILD = re.compile(r"^[A-Za-z0-9_\-.+:]{1,255}$")


class VersioningError(RuntimeError):
    """Versioning cannot be set up as configured; the message names the setting to fix."""


def default_build_id() -> str:
    """The installed landed version: one build per release unless LANDED_BUILD_ID says more."""
    try:
        return version("landed")
    except PackageNotFoundError:
        raise VersioningError(
            "landed is not installed as a package, so it has no version to use as build id; "
            "set LANDED_BUILD_ID (e.g. the image tag or git sha of this release)"
        ) from None


def deployment_name(settings: RoleSettings) -> str:
    """The role's deployment: LANDED_<ROLE>_DEPLOYMENT_NAME, else landed-<role>."""
    name = settings.deployment_name or f"landed-{settings.role}"
    if not _NAME.match(name):
        raise VersioningError(
            f"LANDED_{settings.role.upper()}_DEPLOYMENT_NAME {name!r} is not a deployment name: "
            "use letters, digits, '-', '_' and '/' only (no dots; Temporal splits a version at the "
            "first dot)"
        )
    return name


def role_version(settings: RoleSettings) -> WorkerDeploymentVersion | None:
    """The role's deployment version, or None when LANDED_<ROLE>_VERSIONING is off."""
    if not settings.versioning:
        return None
    name = deployment_name(settings)
    build = settings.build_id or default_build_id()
    if build == PLACEHOLDER_BUILD_ID:
        raise VersioningError(
            f"LANDED_BUILD_ID is still the manifests' placeholder {build!r}: every release "
            "would be one version and a task could replay on code that did not start it; set "
            "it to this release's image tag or git sha"
        )
    if not _BUILD.match(build):
        raise VersioningError(
            f"LANDED_BUILD_ID {build!r} is not a build id: at most 255 of letters, digits and "
            "'-_.+:' (no spaces); use the release's tag or git sha"
        )
    return WorkerDeploymentVersion(deployment_name=name, build_id=build)


def deployment_config(settings: RoleSettings) -> WorkerDeploymentConfig | None:
    """What the role's Worker is given: every workflow it runs (AgentTask, LandedRecheck,
    LandedReceiptLookup) is pinned to this version."""
    found = role_version(settings)
    if found is None:
        return None
    return WorkerDeploymentConfig(
        version=found, use_worker_versioning=True, default_versioning_behavior=WORKFLOWS_PINNED
    )


def current_build_id(described: DescribeWorkerDeploymentResponse) -> str | None:
    """The deployment's current build id; None while unversioned workers are current."""
    routing = described.worker_deployment_info.routing_config
    if routing.HasField("current_deployment_version"):
        return routing.current_deployment_version.build_id or None
    if routing.current_version and routing.current_version != UNVERSIONED:
        return routing.current_version.split(".", 1)[-1]
    return None


async def describe_deployment(client: Client, name: str) -> DescribeWorkerDeploymentResponse | None:
    try:
        return await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=name)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None  # made when the first poller of the deployment reaches the server
        raise


def has_version(described: DescribeWorkerDeploymentResponse, build_id: str) -> bool:
    return any(
        s.deployment_version.build_id == build_id
        for s in described.worker_deployment_info.version_summaries
    )


async def bootstrap(
    client: Client, own: WorkerDeploymentVersion, *, identity: str, within_s: float = 30.0
) -> dict[str, str | bool]:
    """Call once the role's worker polls. Makes ``own`` current when its deployment has never
    had a current version; leaves a deployment that has one (or had one and was set back to
    unversioned on purpose) as it is. Returns what the worker prints when ready."""
    deadline = time.monotonic() + within_s
    name = own.deployment_name
    while True:
        try:
            described = await describe_deployment(client, name)
        except RPCError as exc:
            if exc.status not in (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.PERMISSION_DENIED):
                raise
            raise VersioningError(
                f"the server refused to describe worker deployment {name!r} ({exc}); it needs "
                "Temporal 1.27+ with worker deployments and a principal allowed to read them, "
                "or run unversioned with LANDED_<ROLE>_VERSIONING=false"
            ) from None
        if described is not None:
            current = current_build_id(described)
            changed = described.worker_deployment_info.routing_config.HasField(
                "current_version_changed_time"
            )
            if current is not None or changed:
                # A deployment with a routing decision made by someone: not ours to change.
                return _view(own, current, made_current=False)
            # False: another replica moved first (or the server is not ready): read it again.
            if has_version(described, own.build_id) and await _set_current(
                client, own, described, identity
            ):
                return _view(own, own.build_id, made_current=True)
        if time.monotonic() > deadline:
            raise VersioningError(
                f"the version {own.to_canonical_string()} did not appear in deployment {name!r} "
                f"within {within_s:.0f}s of polling; check that the server supports worker "
                "deployments (Temporal 1.27+, frontend.workerVersioningWorkflowAPIs), or run "
                f"unversioned with LANDED_<ROLE>_VERSIONING=false"
            )
        await asyncio.sleep(0.2)


async def _set_current(
    client: Client,
    own: WorkerDeploymentVersion,
    described: DescribeWorkerDeploymentResponse,
    identity: str,
) -> bool:
    """Set ``own`` current if the deployment is still as described (the conflict token);
    False when another writer changed it first."""
    try:
        await client.workflow_service.set_worker_deployment_current_version(
            SetWorkerDeploymentCurrentVersionRequest(
                namespace=client.namespace,
                deployment_name=own.deployment_name,
                build_id=own.build_id,
                conflict_token=described.conflict_token,
                identity=identity,
            )
        )
    except RPCError as exc:
        if exc.status in (RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.ABORTED):
            return False
        raise
    return True


def _view(
    own: WorkerDeploymentVersion, current: str | None, *, made_current: bool
) -> dict[str, str | bool]:
    return {
        "deployment": own.deployment_name,
        "build_id": own.build_id,
        "current_build_id": current or UNVERSIONED,
        "made_current": made_current,
    }
