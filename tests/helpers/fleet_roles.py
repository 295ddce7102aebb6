"""One more role worker beside helpers.roles.run_roles: a second actor (another harness), or a
runner the test stops and starts again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from helpers.fleet_acts import fleet_log_table
from helpers.roles import Roles
from helpers.sor import make_rows_db
from landed.temporal.plugin import connect
from landed.temporal.settings import ActorSettings, RoleSettings, RunnerSettings
from landed.temporal.workers import build_worker

__all__ = ["PoolPlace", "extra_actor", "extra_runner", "pool_place", "role_worker"]


@dataclass
class PoolPlace:
    """Where a harness-pool test runs: the server, the rows database (with the fleet's act
    log), a tag for its names and the second harness's actor queue."""

    address: str
    db: Path
    tag: str
    second: str


def pool_place(env: WorkflowEnvironment, tmp_path: Path) -> PoolPlace:
    db = make_rows_db(tmp_path / "rows.db")
    fleet_log_table(db)
    tag = uuid.uuid4().hex[:8]
    return PoolPlace(env.client.service_client.config.target_host, db, tag, f"actor2-{tag}")


@asynccontextmanager
async def role_worker(address: str, settings: RoleSettings) -> AsyncIterator[None]:
    identity = settings.resolved_identity()
    client = await connect(identity=identity, address=address)
    worker, _view, cleanup = await build_worker(settings, client, identity)
    try:
        async with worker:
            yield
    finally:
        if cleanup is not None:
            await cleanup()


def extra_actor(address: str, queue: str, identity: str, db: Path) -> Any:
    """Another actor (harness) on ``queue``, with the same acts and rows-db credential."""
    return role_worker(
        address,
        ActorSettings(
            task_queue=queue,
            identity=identity,
            acts=["helpers.acts", "helpers.fleet_acts"],
            credentials={"rows-db": f"sqlite:///{db}"},
            # Unversioned, as run_roles' workers: a versioned one would wait for a promotion.
            versioning=False,
        ),
    )


def extra_runner(address: str, roles: Roles, queue: str, **more: Any) -> Any:
    """A runner on ``queue`` over the roles' ledger, actor and verifier."""
    return role_worker(
        address,
        RunnerSettings(
            task_queue=queue,
            identity=f"runner2@{queue}",
            ledger_url=roles.ledger_url,
            actor_task_queue=roles.queues["actor"],
            verifier_task_queue=roles.queues["verifier"],
            trust=[roles.public_key],
            max_cached_workflows=0,
            sandbox="strict",
            versioning=False,
            **more,
        ),
    )
