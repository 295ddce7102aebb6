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


FLOWS = ("baseline", "floor", "floor_la", "lean_floor", "lean", "default_floor", "default")


def _tally(lean_rate: float, default_rate: float = 20.0) -> Any:
    rates = {
        "baseline": 40.0,
        "floor": 32.0,
        "floor_la": 30.0,
        "lean_floor": 34.0,
        "lean": lean_rate,
        "default_floor": 22.0,
        "default": default_rate,
    }
    done = {n: int(r * 10) for n, r in rates.items()}
    cpu = {n: {"server": 0.02 * done[n], "actor": 0.003 * done[n], "workflow": 0.01} for n in FLOWS}
    return SimpleNamespace(
        seconds=dict.fromkeys(FLOWS, 10.0),
        done=done,
        passed=dict(done),
        failed=dict.fromkeys(FLOWS, 0),
        cpu=cpu,
        round_rates=[rates],
        events=dict.fromkeys(FLOWS, 30),
        steps={"lean": ("act", "read"), "default": ("pre-read", "act", "read")},
    )


@pytest.mark.parametrize(
    ("lean_rate", "default_rate", "met"),
    [(32.0, 20.0, True), (20.0, 20.0, False), (32.0, 18.0, False)],
)
def test_the_report_holds_each_flow_to_its_own_floor_and_to_act_alone(
    lean_rate: float, default_rate: float, met: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report_module().report
    assert report(_tally(lean_rate, default_rate), rounds=1, window=10.0, concurrency=200) is met
    out = capsys.readouterr().out
    assert f"lean {lean_rate / 34:.2f}x its floor's rate >= 0.9x" in out
    assert f"default {default_rate / 40:.2f}x act alone >= 0.5x" in out
    assert f"lean {lean_rate / 40:.2f}x act alone >= 0.65x" in out
    assert "lean flow's steps (2): act, read" in out
    assert f"targets {'all met' if met else 'NOT all met'}" in out
