"""`bench temporal_throughput`'s report: each flow's ratio to act alone from the same run, and
the targets met or not, from what the rounds measured."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _report_module() -> ModuleType:
    # tests/bench shadows the top-level bench package on this suite's path: load it by file.
    path = ROOT / "bench" / "_throughput_report.py"
    spec = importlib.util.spec_from_file_location("throughput_report", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FLOWS = ("baseline", "floor", "floor_la", "lean", "default")


def _tally(lean_rate: float) -> Any:
    done = {
        "baseline": 400,
        "floor": 320,
        "floor_la": 300,
        "lean": int(lean_rate * 10),
        "default": 200,
    }
    cpu = {n: {"server": 0.02 * done[n], "actor": 0.003 * done[n]} for n in FLOWS}
    return SimpleNamespace(
        seconds=dict.fromkeys(FLOWS, 10.0),
        done=done,
        passed=dict(done),
        failed=dict.fromkeys(FLOWS, 0),
        cpu=cpu,
        round_ratios=[(0.8, 0.75, lean_rate / 40, 0.5)],
    )


@pytest.mark.parametrize(("lean_rate", "met"), [(32.0, True), (20.0, False)])
def test_the_report_holds_the_lean_flow_to_its_targets(
    lean_rate: float, met: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report_module().report
    assert report(_tally(lean_rate), rounds=1, window=10.0, concurrency=200) is met
    out = capsys.readouterr().out
    assert f"ratio {lean_rate / 40:.2f}x (target >= 0.65x)" in out
    assert "floor     act + one read" in out and "ratio 0.80x" in out
    assert f"targets {'met' if met else 'NOT met'}" in out
