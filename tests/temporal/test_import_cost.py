"""What importing landed costs: the package exports lazily, and the workflow sandbox compiles the
modules it re-imports for each run only once (while each run still gets fresh module state)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.worker import WorkflowRunner

import landed
from landed.temporal import plugin as _plugin
from landed.temporal.plugin import _COMPILE_ONCE, _with_passthrough

ROOT = Path(__file__).resolve().parents[2]


def test_import_landed_builds_nothing_until_a_name_is_used() -> None:
    code = (
        "import sys, landed; "
        "heavy = [m for m in ('temporalio', 'pydantic', 'aiohttp', 'httpx', 'cryptography') "
        "if m in sys.modules]; "
        "print(','.join(heavy)); "
        "landed.Receipt; "
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == ["", "True"], out


def test_every_public_name_resolves_to_its_module() -> None:
    exports: dict[str, str] = landed._EXPORTS
    assert sorted(exports) == sorted(landed.__all__)
    for name, module in exports.items():
        value = getattr(landed, name)
        assert getattr(sys.modules[module], name) is value, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(landed, "nope")  # noqa: B009


def test_static_imports_match_the_lazy_table() -> None:
    """Type checkers read the TYPE_CHECKING imports, the runtime reads _EXPORTS: they must agree."""
    tree = ast.parse((ROOT / "src" / "landed" / "__init__.py").read_text())
    static: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                for alias in stmt.names:
                    static[alias.asname or alias.name] = stmt.module
    assert static == landed._EXPORTS


def _write_workflow(path: Path, reply: str) -> None:
    path.write_text(
        textwrap.dedent(
            f"""
            from temporalio import workflow

            RUNS: list[str] = []


            @workflow.defn(name="ImportCostProbe")
            class Probe:
                @workflow.run
                async def run(self) -> str:
                    RUNS.append("ran")
                    return {reply!r}
            """
        )
    )


# async: the sandbox builds each workflow instance on a running event loop.
async def test_sandbox_compiles_once_but_runs_each_module_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "landed_import_cost_probe_wf"
    source = tmp_path / f"{module}.py"
    _write_workflow(source, "first")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe: Any = __import__(module)
    runner: WorkflowRunner = _with_passthrough(None)
    defn = workflow._Definition.must_from_class(probe.Probe)

    def sandboxed_class() -> Any:
        # The class the sandbox imported for one run (prepare_workflow makes a real instance).
        from temporalio.worker.workflow_sandbox import _runner

        made: list[Any] = []
        original = _runner._Instance._create_instance

        def spy(self: Any) -> None:
            original(self)
            made.append(self.globals_and_locals["__temporal_workflow_class"])

        monkeypatch.setattr(_runner._Instance, "_create_instance", spy)
        runner.prepare_workflow(defn)
        monkeypatch.setattr(_runner._Instance, "_create_instance", original)
        return made[0]

    first, second = sandboxed_class(), sandboxed_class()
    assert module in _COMPILE_ONCE.names
    # Fresh module state per run: separate classes and module globals, not the host's.
    assert first is not second and first is not probe.Probe
    assert first.run.__globals__ is not second.run.__globals__
    assert first.run.__globals__["RUNS"] is not second.run.__globals__["RUNS"]
    # One compilation: both runs execute the same code object.
    assert first.run.__code__ is second.run.__code__
    # An edited file is compiled again, as Python's own bytecode cache would.
    _write_workflow(source, "second")
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    edited = sandboxed_class()
    assert edited.run.__code__ is not first.run.__code__
    assert "second" in edited.run.__code__.co_consts


async def test_the_sandbox_shortcuts_give_the_sdks_own_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The plugin's sandbox runs the SDK's entry snippets from compiled code and answers the
    # serialization-context questions without re-entering the sandbox: same answers, always.
    from landed.workflows.agent_task import AgentTask
    from temporalio.api.enums.v1 import CommandType
    from temporalio.worker._command_aware_visitor import CommandInfo
    from temporalio.worker.workflow_sandbox import _runner

    made: list[Any] = []
    original = _runner._Instance._create_instance

    def spy(self: Any) -> None:
        original(self)
        made.append(self)

    monkeypatch.setattr(_runner._Instance, "_create_instance", spy)
    _with_passthrough(None).prepare_workflow(workflow._Definition.must_from_class(AgentTask))
    (instance,) = made
    assert type(instance).__name__ == "_CompiledInstance"
    assert _plugin._DIRECT_CONTEXT  # the SDK shape the shortcut was written for
    asked = [
        None,
        CommandInfo(command_type=CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, command_seq=1),
        CommandInfo(command_type=CommandType.COMMAND_TYPE_RECORD_MARKER, command_seq=2),
    ]
    for info in asked:
        fast = instance.get_serialization_context(info)
        assert fast == _runner._Instance.get_serialization_context(instance, info)
        assert fast is not None and fast.workflow_id == instance.get_info().workflow_id
        store = instance.get_external_store_context(info)
        assert store == _runner._Instance.get_external_store_context(instance, info)


def _loaded_after(code: str) -> list[str]:
    """The workflow and activity modules a fresh interpreter holds after running ``code``."""
    probe = (
        f"import sys; {code}; "
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('landed.workflows.', 'landed.activities.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded: list[str] = ast.literal_eval(out.strip())
    return loaded


def test_each_role_loads_only_its_own_workflows_and_activities() -> None:
    # The CLI and the dev stack import the worker assembly before any role is chosen.
    assert _loaded_after("import landed.temporal.workers") == []
    # The actor: its act activity and the built-in acts, not the verifier's probes or the
    # runner's workflows.
    actor = _loaded_after(
        "from landed.temporal import registry; registry.actor(registry.actor_acts([]), {}, 'a')"
    )
    assert actor == [
        "landed.activities._heartbeat",
        "landed.activities._threads",
        "landed.activities.act",
        "landed.activities.builtin_acts",
    ]
