"""landed's recording and alert rules (deploy/prometheus/) through the real promtool: the rules
load, every alert's unit tests pass, and every alert has its tests, summary and runbook."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "landed-rules.yml"
RULE_TESTS = sorted((ROOT / "deploy" / "prometheus" / "tests").glob("*.test.yml"))
RUNBOOKS = ROOT / "docs" / "runbooks.md"
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"

pytestmark = pytest.mark.slow  # promtool evaluates a day of samples for the baseline alert


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=60, check=False
    )


def alerts() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def unit_tests() -> list[dict[str, Any]]:
    return [case for path in RULE_TESTS for case in yaml.safe_load(path.read_text())["tests"]]


def test_promtool_checks_the_rules() -> None:
    result = run("promtool", "check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_unit_tests_pass() -> None:
    assert RULE_TESTS
    result = run("promtool", "test", "rules", *RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_can_fail(tmp_path: Path) -> None:
    """The same unit tests against rules whose no-settlement and verifier-down alerts forget
    the cases with no series at all: promtool must report them."""
    naive = RULES.read_text().replace(
        "unless sum(increase(landed_tasks_settled_total[30m])) > 0",
        "and sum(increase(landed_tasks_settled_total[30m])) == 0",
    )
    (tmp_path / "landed-rules.yml").write_text(naive.replace(" or vector(0)", ""))
    (tmp_path / "tests").mkdir()
    for path in RULE_TESTS:
        (tmp_path / "tests" / path.name).write_text(path.read_text())
    result = run("promtool", "test", "rules", *sorted((tmp_path / "tests").iterdir()))
    assert result.returncode != 0
    report = result.stdout + result.stderr  # promtool writes the failures to stderr
    assert "LandedNoSettlements" in report and "LandedVerifierDown" in report


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_is_tested_firing_pending_and_quiet(rule: dict[str, Any]) -> None:
    name = rule["alert"]
    checks = [c for case in unit_tests() for c in case.get("alert_rule_test", [])]
    mine = [c for c in checks if c["alertname"] == name]
    assert any(c["exp_alerts"] for c in mine), f"{name}: no test where it fires"
    assert any(not c["exp_alerts"] for c in mine), f"{name}: no test where it stays quiet"
    if "for" in rule:
        pending = [
            sample["labels"]
            for case in unit_tests()
            for expr in case.get("promql_expr_test", [])
            for sample in expr.get("exp_samples", [])
            if f'alertname="{name}"' in sample.get("labels", "")
        ]
        assert any('alertstate="pending"' in labels for labels in pending), (
            f"{name}: no test of its pending state inside for: {rule['for']}"
        )


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_is_tested_with_no_traffic(rule: dict[str, Any]) -> None:
    """0/0 is no sample for the ratios: each alert has a case where nothing (or nothing new)
    comes in, in a test group whose name starts with "no traffic"."""
    quiet = [
        check
        for case in unit_tests()
        if case.get("name", "").startswith("no traffic")
        for check in case.get("alert_rule_test", [])
    ]
    assert any(check["alertname"] == rule["alert"] for check in quiet), rule["alert"]


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_has_a_summary_and_a_runbook_section(rule: dict[str, Any]) -> None:
    notes = rule["annotations"]
    assert notes["summary"] and notes["description"]
    path, _, anchor = notes["runbook_url"].partition("#")
    assert path == "docs/runbooks.md" and anchor == rule["alert"].lower()
    headings = re.findall(r"^## (\S+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)
    assert rule["alert"] in headings


def test_there_is_no_runbook_without_an_alert() -> None:
    headings = re.findall(r"^## (\S+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)
    assert sorted(headings) == sorted(rule["alert"] for rule in alerts())


def test_amtool_checks_the_alertmanager_example() -> None:
    result = run("amtool", "check-config", ALERTMANAGER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_checks_the_prometheus_example() -> None:
    result = run("promtool", "check", "config", PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout
