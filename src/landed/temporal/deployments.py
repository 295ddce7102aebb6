"""What ``landed deploy`` reads and changes: each role's Worker Deployment, its current and
ramping versions, and how many open tasks each version still holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from temporalio.api.enums.v1 import WorkerDeploymentVersionStatus
from temporalio.api.workflowservice.v1 import (
    CountWorkflowExecutionsRequest,
    DescribeWorkerDeploymentResponse,
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
)
from temporalio.client import Client

from landed.temporal.versioning import current_build_id, describe_deployment, has_version

__all__ = [
    "DeploymentState",
    "UnknownVersion",
    "VersionState",
    "open_tasks",
    "promote",
    "require_version",
    "state",
]

# The roles whose deployments run workflows: only their versions hold tasks (an actor or
# verifier version holds activities, which always go to the deployment's current version).
WORKFLOW_ROLES = frozenset({"runner"})


class UnknownVersion(LookupError):
    """The build id is not a version of the deployment (no worker of it ever polled)."""


@dataclass
class VersionState:
    build_id: str
    status: str  # current, ramping, draining, drained, inactive
    open_tasks: int | None  # None: a role that runs no workflows


@dataclass
class DeploymentState:
    role: str
    deployment: str
    found: bool
    current: str | None = None
    ramping: str | None = None
    ramp_percent: float | None = None
    versions: list[VersionState] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_STATUS = {
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT: "current",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING: "ramping",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: "draining",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED: "drained",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE: "inactive",
}


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def open_tasks(client: Client, deployment: str, build_id: str) -> int:
    """Open workflows pinned to (or last run on) this version, counted by visibility."""
    version = _quoted(f"{deployment}:{build_id}")
    answer = await client.workflow_service.count_workflow_executions(
        CountWorkflowExecutionsRequest(
            namespace=client.namespace,
            query=f"TemporalWorkerDeploymentVersion = {version} AND ExecutionStatus = 'Running'",
        )
    )
    return int(answer.count)


async def state(client: Client, role: str, deployment: str) -> DeploymentState:
    described = await describe_deployment(client, deployment)
    if described is None:
        return DeploymentState(role=role, deployment=deployment, found=False)
    info = described.worker_deployment_info
    routing = info.routing_config
    ramping = routing.ramping_deployment_version.build_id or None
    out = DeploymentState(
        role=role,
        deployment=deployment,
        found=True,
        current=current_build_id(described),
        ramping=ramping,
        ramp_percent=float(routing.ramping_version_percentage) if ramping else None,
    )
    for summary in info.version_summaries:
        build = summary.deployment_version.build_id
        count = await open_tasks(client, deployment, build) if role in WORKFLOW_ROLES else None
        status = _STATUS.get(summary.status, "unknown")
        out.versions.append(VersionState(build_id=build, status=status, open_tasks=count))
    out.versions.sort(key=lambda v: v.build_id)
    return out


async def require_version(
    client: Client, deployment: str, build_id: str
) -> DescribeWorkerDeploymentResponse:
    """The deployment as described, once ``build_id`` is one of its versions (else
    UnknownVersion, naming the versions it has)."""
    described = await describe_deployment(client, deployment)
    if described is not None and has_version(described, build_id):
        return described
    summaries = described.worker_deployment_info.version_summaries if described else []
    known = sorted(s.deployment_version.build_id for s in summaries)
    raise UnknownVersion(
        f"{build_id!r} is not a version of deployment {deployment!r} (known: "
        f"{', '.join(known) or 'none'}); start its workers with LANDED_BUILD_ID={build_id} "
        "first, then promote"
    )


async def promote(
    client: Client, deployment: str, build_id: str, *, ramp: float | None, identity: str
) -> str | None:
    """Make ``build_id`` the deployment's current version, or (``ramp``) its ramping version at
    that percent. Refuses a build id no worker of the deployment ever polled with. Returns the
    previous current (or ramping) build id."""
    described = await require_version(client, deployment, build_id)
    if ramp is None:
        done = await client.workflow_service.set_worker_deployment_current_version(
            SetWorkerDeploymentCurrentVersionRequest(
                namespace=client.namespace,
                deployment_name=deployment,
                build_id=build_id,
                conflict_token=described.conflict_token,
                identity=identity,
            )
        )
        return done.previous_deployment_version.build_id or None
    ramped = await client.workflow_service.set_worker_deployment_ramping_version(
        SetWorkerDeploymentRampingVersionRequest(
            namespace=client.namespace,
            deployment_name=deployment,
            build_id=build_id,
            percentage=ramp,
            conflict_token=described.conflict_token,
            identity=identity,
        )
    )
    return ramped.previous_deployment_version.build_id or None
