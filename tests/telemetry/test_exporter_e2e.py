"""The exporter beside a real role stack: what the runner settled is what /metrics says."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from helpers.exporter import Place, exporter_on, get, samples, total
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

pytestmark = pytest.mark.slow


async def test_tasks_settled_by_the_runner_show_on_metrics(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    done = rows_task(f"exp-e2e-done-{tag}", db, expect=2, batch=f"a{tag}", write=2)
    short = rows_task(f"exp-e2e-short-{tag}", db, expect=3, batch=f"b{tag}", write=1)
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        receipts = await asyncio.gather(roles.client.run(done), roles.client.run(short))
        exporter = exporter_on(Place(roles.ledger_url, "sqlite"))
        url = await exporter.start()
        try:
            found = samples((await get(f"{url}metrics"))[1])
        finally:
            await exporter.stop()
    assert [r.verdict for r in receipts] == ["verified", "planned"]
    assert total(found, "landed_tasks_settled_total", owner="agent-a") == 2
    assert total(found, "landed_tasks_settled_total", verdict="verified", proof_level="P3") == 1
    assert total(found, "landed_done_proven_total", owner="agent-a") == 1
    assert total(found, "landed_tasks_started_total", owner="agent-a") == 2
    assert total(found, "landed_probe_observations_total", kind="record", outcome="pass") >= 1
    assert total(found, "landed_probe_observations_total", outcome="mismatch") >= 1
    assert total(found, "landed_probe_duration_seconds_count", kind="record") >= 2
