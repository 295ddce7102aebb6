"""The time-skipping server runs landed's roles as the dev server does: the shared fixture works."""

from __future__ import annotations

from pathlib import Path

from helpers.roles import run_roles
from helpers.sor import make_rows_db, rows_task
from temporalio.testing import WorkflowEnvironment


async def test_a_task_settles_on_the_time_skipping_server(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    address = env.client.service_client.config.target_host
    async with run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
    ) as roles:
        spec = rows_task("skip-1", db, expect=5, batch="b1", write=5)
        handle = await roles.client.start(spec)
        # Awaited through the environment's client, the confirmation timer is skipped.
        receipt = await env.client.get_workflow_handle(handle.workflow.id).result()
        assert receipt["verdict"] == "verified"
