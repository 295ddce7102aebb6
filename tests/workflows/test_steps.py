"""The typed boundary (landed.task.steps, landed.loops.steps): the workflows call each activity
by its declaration, never by a name string, and each declaration is implemented in activities/
under the same activity type name, argument and result types."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from helpers.source import parse_many
from temporalio import activity

import landed.activities
from landed.activities.act import ActActivities
from landed.activities.config_check import VerifierCheck
from landed.activities.consent import ConsentActivities
from landed.activities.fleet import FleetActivities
from landed.activities.loops import LoopActivities
from landed.activities.role_check import ActorCheck, RunnerCheck
from landed.activities.rollout_gate import RolloutGateActivities
from landed.activities.runner import RunnerActivities
from landed.activities.verify import VerifyActivities
from landed.loops import steps as loop_steps
from landed.task import steps

ROOT = Path(__file__).resolve().parents[2]
IMPLEMENTED_BY: dict[type[Any], type] = {
    steps.Act: ActActivities,
    steps.ActorAnswers: ActorCheck,
    steps.Verify: VerifyActivities,
    steps.Consent: ConsentActivities,
    steps.VerifierAnswers: VerifierCheck,
    steps.RunnerSteps: RunnerActivities,
    steps.RunnerAnswers: RunnerCheck,
    loop_steps.LoopSteps: LoopActivities,
    steps.FleetGateStep: FleetActivities,
    steps.CanarySteps: RolloutGateActivities,
}
_BY_NAME = {"execute_activity", "start_activity", "execute_local_activity", "start_local_activity"}


def _definitions(cls: type) -> dict[str, activity._Definition]:
    found = {}
    for name, member in inspect.getmembers(cls, callable):
        defn = activity._Definition.from_callable(member)
        if defn is not None:
            found[name] = defn
    return found


def test_every_interface_of_steps_is_listed_here() -> None:
    declared = [getattr(m, name) for m in (steps, loop_steps) for name in m.__all__]
    assert set(declared) == set(IMPLEMENTED_BY)


@pytest.mark.parametrize("interface", IMPLEMENTED_BY, ids=lambda c: c.__name__)
def test_each_declared_step_is_implemented_as_declared(interface: type[Any]) -> None:
    declared = _definitions(interface)
    implemented = _definitions(IMPLEMENTED_BY[interface])
    assert declared, interface
    assert set(declared) == set(implemented), interface
    for method, defn in declared.items():
        real = implemented[method]
        assert (real.name, real.arg_types, real.ret_type) == (
            defn.name,
            defn.arg_types,
            defn.ret_type,
        ), (interface.__name__, method)


def test_every_activity_of_activities_is_declared() -> None:
    declared = {d.name for i in IMPLEMENTED_BY for d in _definitions(i).values()}
    found = set()
    for info in pkgutil.iter_modules(landed.activities.__path__):
        module = importlib.import_module(f"landed.activities.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                found |= {d.name for d in _definitions(cls).values()}
    assert found == declared


def test_no_workflow_reaches_an_activity_by_name() -> None:
    paths = sorted((ROOT / "workflows").glob("*.py"))
    for path, tree in zip(paths, parse_many([p.read_text() for p in paths]), strict=True):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names if a.name.endswith("_ACTIVITY")]
                assert not names, f"workflows/{path.name} imports {names}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                where = f"workflows/{path.name}:{node.lineno}"
                assert node.func.attr not in _BY_NAME, f"{where}: {node.func.attr} by name"
                if node.func.attr.endswith("_activity_method"):
                    keywords = {k.arg for k in node.keywords}
                    assert "result_type" not in keywords, f"{where}: result_type by hand"
