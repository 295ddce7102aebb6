"""The landed plugin: public SDK API only, every room's sandbox decision written down, and the
sandbox it builds running a user's workflow module fresh per run while sharing landed's core."""

from __future__ import annotations

import ast
import pkgutil
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.source import parse
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

import landed
from landed.task.spec import TaskSpec
from landed.temporal import plugin
from landed.temporal.plugin import connect, landed_plugin, strict_workflow_runner

ROOT = Path(__file__).resolve().parents[2]
# The worker assembly and the plugin: what a Temporal SDK upgrade must not break unnoticed.
ASSEMBLY = ("plugin.py", "connection.py", "registry.py", "workers.py")


def _sdk_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for each name imported from temporalio in the file."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("temporalio"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("temporalio")]
    return found


def test_the_assembly_uses_only_public_sdk_api() -> None:
    private = [
        f"{path}: {module}.{name}"
        for path in ASSEMBLY
        for module, name in _sdk_imports(ROOT / "src" / "landed" / "temporal" / path)
        if any(part.startswith("_") for part in (*module.split("."), name))
    ]
    assert private == [], private


def test_every_room_of_landed_has_its_sandbox_decision() -> None:
    """A new room is shared with the sandbox only once someone lists it (and says why)."""
    rooms = {
        f"landed.{m.name}"
        for m in pkgutil.iter_modules(landed.__path__)
        if not m.name.startswith("__")
    }
    assert rooms - set(plugin.NOT_SHARED) == set(plugin._CORE_ROOMS)
    assert not set(plugin.NOT_SHARED) & set(plugin._CORE_ROOMS)
    assert "landed.activities" not in plugin.SANDBOX_PASSTHROUGH


def test_the_plugin_adds_only_passthrough_and_keeps_the_callers_runner() -> None:
    runner = landed_plugin().workflow_runner
    assert callable(runner)
    # The SDK's default runner (none given) gets the sandbox with landed's modules shared.
    shared = runner(None)
    assert type(shared) is SandboxedWorkflowRunner
    assert shared.restrictions == SandboxedWorkflowRunner().restrictions.with_passthrough_modules(
        *plugin.SANDBOX_PASSTHROUGH, *plugin._CORE_ROOMS
    )
    # A caller's own sandbox keeps its settings, with the passthrough added.
    mine = SandboxedWorkflowRunner(runner_class=UnsandboxedWorkflowRunner)
    assert runner(mine).runner_class is UnsandboxedWorkflowRunner
    assert "landed.workflows" in runner(mine).restrictions.passthrough_modules
    # An unsandboxed runner shares every module already.
    plain = UnsandboxedWorkflowRunner()
    assert runner(plain) is plain
    strict = strict_workflow_runner()
    assert runner(strict) is strict
    assert "landed.workflows" not in strict.restrictions.passthrough_modules  # type: ignore[attr-defined]


_PROBE = """
from temporalio import workflow

from landed.task.spec import TaskSpec

RUNS: list[str] = []


@workflow.defn(name="{name}")
class Probe:
    @workflow.run
    async def run(self) -> list[int]:
        RUNS.append("ran")
        # How many runs this module's state has seen, and which TaskSpec class the run sees.
        return [len(RUNS), id(TaskSpec)]
"""


@pytest.mark.parametrize("sandbox", ["shared", "strict"])
async def test_a_users_workflow_module_is_fresh_per_run_and_landeds_core_is_shared(
    sandbox: str, temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"landed_plugin_probe_{sandbox}"
    name = f"PluginProbe{sandbox.title()}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(_PROBE.format(name=name)))
    monkeypatch.syspath_prepend(str(tmp_path))
    probe: Any = __import__(module)
    client = await connect(identity=f"plugin-test@{sandbox}", address=temporal_dev)
    queue = f"plugin-probe-{uuid.uuid4().hex[:8]}"
    runner = strict_workflow_runner() if sandbox == "strict" else SandboxedWorkflowRunner()
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[probe.Probe],
        workflow_runner=runner,
        max_cached_workflows=0,
    )
    async with worker:
        answers = [
            await client.execute_workflow(name, id=f"{queue}-{i}", task_queue=queue)
            for i in range(2)
        ]
    # Each run imported the module afresh (its list started empty both times), and saw the
    # worker's own TaskSpec class: the class the data converter instantiates.
    assert answers == [[1, id(TaskSpec)], [1, id(TaskSpec)]]
    assert probe.RUNS == []  # the worker's own copy of the module was never run
    sys.modules.pop(module, None)
