"""``landed mcp``'s tools against a real landed stack (a Temporal dev server and the three
roles), through an in-process MCP client: a DONE and a NOT DONE verdict reach the
client, an unknown task is a tool error, and a held task can be asked about, never approved."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import mcp
import pytest
from helpers.approvers import approver_keys
from helpers.roles import run_roles
from helpers.sor import make_rows_db, row_count, rows_task
from helpers.wait import until

from landed.agents.mcp_server import build_server
from landed.agents.service import LandedTools

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _roles(address: str, tmp_path: Path, db: Path) -> Any:
    trusted, _ = approver_keys(tmp_path, ("dana",))
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=("helpers.acts", "helpers.gate_acts"),
        runner={"approvers": [str(trusted)]},
    )


async def _call(client: mcp.Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)


async def test_done_and_not_done_reach_the_mcp_client(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    full = rows_task(f"mcp-full-{tag}", db, expect=3, batch=f"full-{tag}", write=3)
    short = rows_task(f"mcp-short-{tag}", db, expect=3, batch=f"short-{tag}", write=2)
    async with (
        _roles(temporal_dev, tmp_path, db) as roles,
        mcp.Client(build_server(LandedTools(roles.client))) as client,
    ):
        failed, done = await _call(client, "run", task_spec_json=json.dumps(full), timeout_s=120)
        assert not failed and done.startswith("DONE: the read-back found what the plan"), done
        assert f"task: mcp-full-{tag}" in done and "verdict: verified" in done
        failed, submitted = await _call(client, "submit", task_spec_json=json.dumps(short))
        assert not failed and submitted.startswith("NOT DONE: task mcp-short-")
        assert f"task: mcp-short-{tag}" in submitted.splitlines()

        async def settled() -> str:
            text = (await _call(client, "status", task_id=f"mcp-short-{tag}"))[1]
            return text if "has not settled" not in text else ""

        status = await until("the short task settles", settled, timeout=120)
        assert status.splitlines()[0] == (
            "NOT DONE: the read-back of 'insert 3 rows' found 2 where count(3) was expected "
            "(mismatch)."
        ), status
        assert "verdict: verified" not in status and "receipt: " not in status
        failed, receipt = await _call(client, "receipt", task_id=f"mcp-short-{tag}")
        lines = receipt.splitlines()
        assert not failed and lines[0] == (
            "NOT DONE: the read-back of 'insert 3 rows' found 2 where count(3) was expected "
            "(mismatch)."
        ), receipt
        body = json.loads(lines[-1].removeprefix("receipt: "))
        assert body["task_id"] == f"mcp-short-{tag}" and body["claimed_status"] == "done"
        slow = rows_task(f"mcp-slow-{tag}", db, expect=1, batch=f"slow-{tag}", write=1)
        slow["act"]["input"]["sleep_before_s"] = 3
        failed, waited = await _call(client, "run", task_spec_json=json.dumps(slow), timeout_s=0.5)
        assert not failed and waited.startswith(
            f"NOT DONE: task mcp-slow-{tag} has not settled within 0.5 s; it runs on"
        ), waited
        failed, unknown = await _call(client, "receipt", task_id=f"mcp-nothing-{tag}")
        assert failed and "no task 'mcp-nothing-" in unknown and "check the id" in unknown
    assert row_count(db, f"full-{tag}") == 3 and row_count(db, f"short-{tag}") == 2


async def test_a_held_task_can_be_asked_about_never_approved(
    temporal_dev: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    task = {
        **rows_task(f"mcp-held-{tag}", db, expect=2, batch=f"held-{tag}", write=2),
        "irreversible": "send",
        "approval": {"approver": "dana"},
    }
    async with (
        _roles(temporal_dev, tmp_path, db) as roles,
        mcp.Client(build_server(LandedTools(roles.client))) as client,
    ):
        failed, _ = await _call(client, "submit", task_spec_json=json.dumps(task))
        assert not failed

        async def listed() -> str:
            text = (await _call(client, "held"))[1]
            return text if f"mcp-held-{tag}" in text else ""

        held = await until("the task is listed as held", listed, timeout=60)
        assert held.startswith("NOT DONE: ") and "who may approve: dana" in held
        failed, asked = await _call(
            client, "request_approval", task_id=f"mcp-held-{tag}", reason="ship it"
        )
        assert not failed and asked.startswith(f"NOT DONE: task mcp-held-{tag} waits")
        assert "who may approve: dana" in asked and f"landed approve mcp-held-{tag}" in asked
        logged = [r.getMessage() for r in caplog.records if r.name == "landed.agents"]
        assert logged == [
            f"approval requested for task mcp-held-{tag} by agent (ship it); who may approve: dana"
        ]
        failed, refused = await _call(client, "request_approval", task_id=f"mcp-none-{tag}")
        assert failed and "not waiting for approval" in refused
        progress = await roles.client.task(f"mcp-held-{tag}").progress()
        assert progress.rung == "held"  # still waiting: asking is not approving
    assert row_count(db, f"held-{tag}") == 0
