"""The version policy (landed.workflows.versions): every patch id a workflow passes to
``workflow.patched`` is a name of versions.py and listed in its ``PATCHES``, every listed id is
used, a pinned workflow takes no new patch, and every committed history replays on this code."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from helpers.histories import HISTORIES, all_workflows, patches
from helpers.source import parse_many
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from landed.task.names import TRIPWIRE_WORKFLOW
from landed.temporal.plugin import landed_plugin
from landed.workflows import versions

ROOT = Path(__file__).resolve().parents[2]
# The patches the pinned workflows held when they became pinned: each goes in its release, and
# no new one joins them (a pinned workflow changes by a new build).
PINNED_KEPT = {
    "landed-fleet-gate",
    "landed-durable-reads",
    "landed-unchecked-blocks",
    "landed-unknown-act-blocks",
    "release-reads-back",
    "landed-recheck-frames",
    "claim-own-plan-not-proof",
}
_MARKER_CALLS = {"patched", "deprecate_patch"}


def _patch_calls() -> list[tuple[str, ast.Call, set[str]]]:
    """Each patch call in workflows/: its module, the call, the names the module imports from
    landed.workflows.versions."""
    paths = sorted((ROOT / "workflows").glob("*.py"))
    out = []
    for path, tree in zip(paths, parse_many([p.read_text() for p in paths]), strict=True):
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "landed.workflows.versions"
            for alias in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in _MARKER_CALLS:
                    out.append((path.name, node, imported))
    return out


def _used_ids() -> set[str]:
    used = set()
    for module, call, imported in _patch_calls():
        assert module != "versions.py", "versions.py lists patches; it calls none"
        (arg,) = call.args
        where = f"workflows/{module}:{call.lineno}"
        # A constant of versions.py: an id built at run time would make the marker data.
        assert isinstance(arg, ast.Name), f"{where}: pass a name of versions.py, not an expression"
        assert arg.id in imported, f"{where}: {arg.id} is not a name of versions.py"
        used.add(getattr(versions, arg.id))
    return used


def test_every_patch_used_is_listed_and_every_listed_patch_is_used() -> None:
    used = _used_ids()
    listed = [patch.id for patch in versions.PATCHES]
    assert len(listed) == len(set(listed)), "a patch id is listed twice"
    assert used == set(listed), (
        f"used, not listed: {sorted(used - set(listed))}; listed, unused: "
        f"{sorted(set(listed) - used)}"
    )


def test_each_listed_patch_says_who_calls_it_why_and_when_it_goes() -> None:
    known = set(versions.PINNED) | set(versions.LONG_LIVED)
    for patch in versions.PATCHES:
        assert patch.why and patch.remove_in, patch.id
        assert set(patch.workflows) <= known, patch
        assert set(patch.workflows) <= set(versions.PINNED) or set(patch.workflows) <= set(
            versions.LONG_LIVED
        ), patch
    assert TRIPWIRE_WORKFLOW in versions.LONG_LIVED


def test_a_pinned_workflow_takes_no_new_patch() -> None:
    pinned = {p.id for p in versions.PATCHES if set(p.workflows) & set(versions.PINNED)}
    new = pinned - PINNED_KEPT
    assert not new, (
        f"{sorted(new)}: AgentTask, VerifyClaim and LandedRecheck are pinned and change by a new "
        "build, without a patch (docs/operations.md, 'Changing a workflow')"
    )


def test_a_retired_patch_is_neither_listed_nor_held_by_a_committed_history() -> None:
    listed = {patch.id for patch in versions.PATCHES}
    retired = {patch_id for patch_id, why in versions.RETIRED if why}
    assert len(retired) == len(versions.RETIRED), "each retired id says why"
    assert not listed & retired
    for path in HISTORIES.rglob("*.json"):
        history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))
        held = {p for p in patches(history) for r in retired if p.startswith(r)}
        assert not held, f"{path.name} was recorded on an earlier build: record it again"


def test_no_workflow_branches_on_replaying() -> None:
    """What a run decided comes from its history's events; code that asks whether it is
    replaying takes another branch on replay than it took live, or reads a marker as data."""
    for path in sorted((ROOT / "workflows").glob("*.py")):
        assert "is_replaying" not in path.read_text(), path.name


# Recorded with a timer between the claim and the act (an interceptor of
# test_agent_task_resets, which replays them with it).
_WITH_INTERCEPTOR = {"claim_then_timer"}
COMMITTED = sorted(
    path for path in HISTORIES.rglob("*.json") if path.parent.name not in _WITH_INTERCEPTOR
)


@pytest.mark.parametrize("path", COMMITTED, ids=[str(p.relative_to(HISTORIES)) for p in COMMITTED])
async def test_each_committed_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))
    for patch in patches(history):
        assert patch in {p.id for p in versions.PATCHES}, (path.name, patch)
    replayer = Replayer(workflows=all_workflows(), plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, (path.name, result.replay_failure)


def _workflow_type(path: Path) -> str:
    for event in json.loads(path.read_text())["events"]:
        started = event.get("workflowExecutionStartedEventAttributes")
        if started:
            return str(started["workflowType"]["name"])
    raise AssertionError(f"{path}: no workflow start event")


def test_every_workflow_has_a_committed_history() -> None:
    """A workflow without one could change its commands unnoticed: its running instances
    would then fail to replay after a deploy."""
    kept = {_workflow_type(path) for path in HISTORIES.rglob("*.json")}
    names = {getattr(cls, "__temporal_workflow_definition").name for cls in all_workflows()}
    assert names - kept == set(), (
        "record them: LANDED_RECORD_HISTORIES=1 pytest tests/temporal/test_small_histories.py"
    )
