"""``landed submit --wait`` says why a task is not done: 1 when a read-back found something
other than the claim, 3 when nothing could be observed (as ``landed verify`` does)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

pytestmark = pytest.mark.slow


async def _submit_wait(
    task: dict[str, Any], address: str, queue: str, tmp: Path, *flags: str
) -> tuple[int, Any]:
    path = tmp / f"{task['task_id']}.json"
    path.write_text(json.dumps(task))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "landed", "submit", str(path), "--wait", "--json",
        "--address", address, "--task-queue", queue, *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None, err
    return proc.returncode, json.loads(out)


async def test_a_read_back_that_disagrees_exits_1(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        task = rows_task(
            f"half-{uuid.uuid4().hex[:8]}", db, expect=4, batch="h", write=2
        )  # claims 4, writes 2
        code, out = await _submit_wait(task, temporal_dev, roles.queues["runner"], tmp_path)
    assert code == 1, out
    assert out["receipt"]["verdict"] not in ("verified", "reconciled")


async def test_nothing_observed_exits_3(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    async with rows_roles(temporal_dev, tmp_path, db, verifier=False) as roles:
        task = {
            **rows_task(f"unread-{uuid.uuid4().hex[:8]}", db, expect=1, batch="u", write=1),
            "time_cap": 2,
        }
        task["timeouts"] = {"verify": 1}
        # No verifier runs: asked first, the check would refuse the task (exit 5).
        queue = roles.queues["runner"]
        code, out = await _submit_wait(task, temporal_dev, queue, tmp_path, "--no-role-check")
    assert code == 3, out
    results = [p.get("result") for p in out["receipt"]["proof"] if p.get("kind") == "record"]
    assert results and set(results) == {"probe-error"}


async def test_wait_shows_the_web_ui_link_and_each_step(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    task_id = f"steps-{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{task_id}.json"
    path.write_text(json.dumps(rows_task(task_id, db, expect=2, batch=task_id, write=2)))
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "landed", "submit", str(path), "--wait",
            "--address", temporal_dev, "--task-queue", roles.queues["runner"],
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err
    lines = err.decode().splitlines()
    host, port = temporal_dev.rsplit(":", 1)
    link = f"http://{host}:{int(port) + 1000}/namespaces/default/workflows/{task_id}/"
    assert lines[0].startswith(f"{task_id}: {link}") and lines[0].endswith("/history"), lines
    assert [line.strip() for line in lines[1:]] == ["pre-read", "acting", "verifying", "settled"]
    shown = out.decode().splitlines()
    assert shown[1].startswith("DONE: the read-back found what the plan expects: 'insert 2 rows'")
    assert shown[2].startswith("verdict verified"), shown
