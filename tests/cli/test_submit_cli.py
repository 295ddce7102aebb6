"""`landed submit` as a user runs it (the installed command): bad input exits 3, an unreachable
or refusing Temporal exits 1, each named in words and under --json as one object; Ctrl-C
while it waits leaves the task running."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers.task_spec import spec
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

# Each test runs the installed `landed` command.
pytestmark = pytest.mark.slow


def _submit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    landed = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")
    return subprocess.run(
        [landed, "submit", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_submit_exits_3_on_garbage_and_1_when_temporal_is_unreachable(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe\x00\x81garbage\x80")
    nested = tmp_path / "nested.json"
    nested.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    for path in (garbage, nested):
        done = _submit_cli(str(path))
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr and "invalid task spec" in done.stderr
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    done = _submit_cli(str(good), "--address", "127.0.0.1:1")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "cannot reach Temporal" in done.stderr
    # --json answers on stdout whatever happened: one object naming the error.
    done = _submit_cli(str(good), "--address", "127.0.0.1:1", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"] == "Temporal unreachable", done.stdout
    done = _submit_cli(str(tmp_path / "missing.json"), "--json")
    assert done.returncode == 3
    answer = json.loads(done.stdout)
    assert answer["error"] == "unreadable task file" and "missing.json" in answer["message"]


def test_submit_json_names_an_invalid_spec_with_a_message_and_each_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec(task_id="")))
    done = _submit_cli(str(bad), "--json")
    assert done.returncode == 3
    answer = json.loads(done.stdout)
    assert answer["error"] == "invalid task spec" and "task_id" in answer["message"]
    assert answer["problems"][0]["field"] == "task_id"
    assert "task_id" in done.stderr


def test_submit_names_a_request_temporal_refuses(temporal_dev: str, tmp_path: Path) -> None:
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    done = _submit_cli(str(good), "--address", temporal_dev, "--namespace", "no-such-namespace")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "Temporal refused the request (NOT_FOUND" in done.stderr  # an RPCError, named


async def test_submit_exits_3_when_the_task_id_belongs_to_another_task(
    temporal_dev: str, tmp_path: Path
) -> None:
    """The same spec again attaches (exit 0, "already submitted"); another spec under the id is
    refused with exit 3 and says why. No runner polls the queue: the first run stays open."""
    queue = f"nobody-{os.getpid()}-{tmp_path.name}"
    task_id = f"owned-{tmp_path.name}"
    first, other = tmp_path / "first.json", tmp_path / "other.json"
    first.write_text(json.dumps(spec(task_id=task_id)))
    other.write_text(json.dumps(spec(task_id=task_id, outcome="something else entirely")))
    # No runner answers the role check either: start without it.
    common = ("--address", temporal_dev, "--task-queue", queue, "--no-role-check")
    try:
        assert _submit_cli(str(first), *common).returncode == 0
        again = _submit_cli(str(first), *common)
        assert again.returncode == 0 and "already submitted" in again.stdout, again.stderr
        refused = _submit_cli(str(other), *common, "--json")
        assert refused.returncode == 3, refused.stderr
        answer = json.loads(refused.stdout)
        assert answer["error"] == "task id reused" and "its own task_id" in answer["message"]
    finally:
        client = await Client.connect(temporal_dev)
        await client.get_workflow_handle(task_id).terminate("test over")


async def test_ctrl_c_while_submit_waits_answers_in_json_and_the_task_runs_on(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Ctrl-C during ``submit --wait --json`` still gives one JSON object, exit 130, and says the
    started task runs on (no runner polls the queue, so it never settles by itself)."""
    import signal

    queue = f"nobody-{os.getpid()}-{tmp_path.name}"
    task_id = f"waited-{tmp_path.name}"
    task = tmp_path / "task.json"
    task.write_text(json.dumps(spec(task_id=task_id)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    landed = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")
    args = [landed, "submit", str(task), "--wait", "--json", "--no-role-check"]
    proc = subprocess.Popen(
        [*args, "--address", temporal_dev, "--task-queue", queue],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    client = await Client.connect(temporal_dev)
    handle = client.get_workflow_handle(task_id)
    try:
        for _ in range(300):  # until the workflow exists: the submission is waiting on it
            try:
                await handle.describe()
                break
            except RPCError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("submit never started the task")
        await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, (proc.returncode, stdout, stderr)
        answer = json.loads(stdout)
        assert answer["error"] == "interrupted" and task_id in answer["message"], answer
        assert "runs on" in answer["message"] and "Traceback" not in stderr, stderr
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        await handle.terminate("test over")


async def test_submit_to_a_namespace_without_landeds_search_attributes_says_so(
    temporal_dev: str, tmp_path: Path
) -> None:
    """Not "Temporal unreachable": the server answered, the namespace is not set up."""
    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest

    bare = f"bare-{os.getpid()}-{tmp_path.name[-6:]}".replace("_", "-")
    client = await Client.connect(temporal_dev)
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=bare, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    good = tmp_path / "task.json"
    good.write_text(json.dumps(spec()))
    # No runner serves this namespace: the role check would refuse first (naming the runner);
    # off, the start itself meets the namespace's missing search attributes.
    where = ("--address", temporal_dev, "--namespace", bare, "--json", "--no-role-check")
    done = _submit_cli(str(good), *where)
    for _ in range(50):  # a new namespace takes a moment to be served
        if "not found" not in done.stdout.lower():
            break
        await asyncio.sleep(0.2)
        done = _submit_cli(str(good), *where)
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert answer["error"] == "namespace not ready", answer
    assert "search attribute" in answer["message"]
