"""`landed dev --otlp`'s environment on real role processes: one trace per task from
`landed submit` through the runner, actor and verifier processes, each under its own service
name, exported over OTLP/HTTP when each process stops; no source secret on the wire; each
role's task events logged as JSON with the same trace id."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from helpers.otel import http_receiver
from helpers.sor import Site, make_rows_db, publish_task
from helpers.wait import until

from landed.cli.dev import otlp_env
from landed.dev.server import free_port
from landed.dev.stack import DevStack
from landed.ledger.factory import open_ledger

TESTS = Path(__file__).parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _stack(tmp_path: Path, db: Path, site_url: str, endpoint: str) -> DevStack:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_", "OTEL_"))
    }
    base.update(
        {
            "LANDED_SOURCES__ROWS_DB__URL": f"sqlite:///{db}",
            "LANDED_SOURCES__SITE__URL": site_url,
            "LANDED_ACTOR_CREDENTIALS": json.dumps(
                {"rows-db": f"sqlite:///{db}", "site": site_url}
            ),
            "LANDED_ACTOR_ACTS": "helpers.acts",
            "LANDED_LOG_FORMAT": "json",
        }
    )
    env = otlp_env(endpoint, "http/protobuf")
    env["actor"]["PYTHONPATH"] = str(TESTS)
    env["runner"]["LANDED_RUNNER_METRICS_PORT"] = str(free_port())
    return DevStack(home=tmp_path / ".landed", headless=True, base_env=base, env=env)


async def _submit(path: Path, address: str, endpoint: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "OTEL_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME="landed-submit")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "landed", "submit", str(path), "--wait", "--json",
        "--address", address, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert json.loads(out)["receipt"]["verdict"] == "verified"


async def _timed(stack: DevStack) -> str:
    """The runner's metrics page in OpenMetrics once it has timed a task, else ""."""
    url = (stack.roles["runner"].ready or {}).get("metrics")
    accept = {"Accept": "application/openmetrics-text;version=1.0.0"}
    async with httpx.AsyncClient() as http:
        text = (await http.get(url, headers=accept)).text if url else ""
    return text if "landed_task_duration_seconds_count 1.0" in text else ""


async def test_one_trace_across_the_role_processes(tmp_path: Path) -> None:
    canary = f"canary{uuid.uuid4().hex}"
    site = Site().start()
    db = make_rows_db(tmp_path / "sor" / "rows.db")
    task_id = f"procs-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "task.json"
    # The act publishes to the site through a URL holding the canary, and echoes that URL.
    task = publish_task(task_id, task_id)
    task["act"]["input"]["echo_credential"] = True
    path.write_text(json.dumps(task))
    try:
        with http_receiver() as (endpoint, received):
            secret_url = site.url.replace("http://", f"http://landed:{canary}@")
            stack = _stack(tmp_path, db, secret_url, endpoint)
            await stack.start()
            try:
                assert stack.server is not None
                await _submit(path, stack.server.address, endpoint)
                page = await until("the task timed", lambda: _timed(stack), timeout=30)
                async with await open_ledger(stack.ledger_url, create=False) as ledger:
                    (receipt,) = await ledger.get(task_id)
            finally:
                await asyncio.to_thread(stack.stop)  # each role flushes its spans as it stops
            spans = received.spans()
    finally:
        site.stop()
    (run,) = [
        s
        for _, s in spans
        if s.name == "RunWorkflow:AgentTask"
        and any(a.value.string_value == task_id for a in s.attributes)
    ]
    services = {res["service.name"]: set() for res, _ in spans}
    for res, span in spans:
        if span.trace_id == run.trace_id:
            services[res["service.name"]].add(span.name)
    assert "StartWorkflow:AgentTask" in services["landed-submit"]
    assert {"RunWorkflow:AgentTask", "RunActivity:landed.settle", "landed.settle"} <= services[
        "landed-runner"
    ]
    assert {"RunActivity:landed.act", "invoke_agent agent-b"} <= services["landed-actor"]
    assert {"RunActivity:landed.verify", "landed.read http"} <= services["landed-verifier"]
    assert all(canary.encode() not in raw for raw in received.raw)
    # Exemplars: the verifier's readings and the runner's task duration carry this trace.
    trace = run.trace_id.hex()
    assert {(p.landed or {}).get("trace_id") for p in receipt.proof if p.checked_by} >= {trace}
    assert f'task_id="{task_id}",trace_id="{trace}"' in page
    # Each role logged its task events as JSON, with the trace id of the spans above.
    events = []
    for role in ("actor", "verifier", "runner"):
        text = (tmp_path / ".landed" / "logs" / f"{role}.log").read_text()
        assert canary not in text
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        events += [(e["role"], e["event"]) for e in lines if e.get("task_id") == task_id]
        trace_ids = {e["trace_id"] for e in lines if e.get("task_id") == task_id}
        assert trace_ids == {run.trace_id.hex()}, (role, trace_ids)
    # Three reads: the pre-read, the read-back, and the confirmation read after a quiet interval.
    assert sorted(events) == [
        ("actor", "acted"),
        ("runner", "settled"),
        ("verifier", "read"),
        ("verifier", "read"),
        ("verifier", "read"),
    ]
