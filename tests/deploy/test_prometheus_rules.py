"""landed's recording and alert rules (deploy/prometheus/) through the real promtool: the rules
load and are what the generator writes from slos.yaml and alerts.yml, every alert's unit tests
pass, and every alert has its tests, summary, runbook and links a person can open."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "landed-rules.yml"
RULE_TESTS = sorted((ROOT / "deploy" / "prometheus" / "tests").glob("*.test.yml"))
RUNBOOKS = ROOT / "docs" / "runbooks.md"
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"

# promtool evaluates days of samples for the 3-day burn-rate alerts (about 20 s on 2 cores).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=300, check=False
    )


def alerts() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def unit_tests() -> list[dict[str, Any]]:
    return [case for path in RULE_TESTS for case in yaml.safe_load(path.read_text())["tests"]]


def generator() -> ModuleType:
    path = ROOT / "deploy" / "prometheus" / "generate.py"
    spec = importlib.util.spec_from_file_location("prometheus_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rules_are_generated_from_the_slo_file() -> None:
    """landed-rules.yml is what deploy/prometheus/generate.py writes (defaults, no env)."""
    assert RULES.read_text() == generator().render({}), (
        "deploy/prometheus/landed-rules.yml is stale; run python deploy/prometheus/generate.py "
        "and python deploy/k8s/generate.py"
    )


def test_an_slo_override_gets_its_own_alerts(tmp_path: Path) -> None:
    """An owner's own objective: its alerts read only its series, the default's all others."""
    gen = generator()
    doc = yaml.safe_load(gen.SLOS.read_text())
    doc["slos"][0]["owners"] = {"billing": {"objective": 0.99}}
    groups = gen.slo_groups(doc)
    burns = [r for g in groups for r in g["rules"] if r.get("alert") == "LandedProofRateBurn1h"]
    assert len(burns) == 2
    assert 'owner!~"billing"' in burns[0]["expr"] and "> 0.72" in burns[0]["expr"]
    assert 'owner="billing"' in burns[1]["expr"] and "> 0.144" in burns[1]["expr"]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    result = run("promtool", "check", "rules", tmp_path / "rules.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_runbook_base_must_be_absolute() -> None:
    with pytest.raises(SystemExit, match="LANDED_RUNBOOK_BASE_URL"):
        generator().render({"LANDED_RUNBOOK_BASE_URL": "docs/runbooks.md"})
    text = generator().render({"LANDED_RUNBOOK_BASE_URL": "https://ops.example.org/rb.html"})
    assert "runbook_url: https://ops.example.org/rb.html#landedproofrateburn1h" in text


def test_promtool_checks_the_rules() -> None:
    result = run("promtool", "check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_there_are_promtool_unit_tests() -> None:
    assert len(RULE_TESTS) >= 5, RULE_TESTS


# One promtool run per file: each evaluates every rule at every step, so the files run apart
# (and in parallel under pytest-xdist).
@pytest.mark.parametrize("path", RULE_TESTS, ids=lambda path: path.name)
def test_promtool_unit_tests_pass(path: Path) -> None:
    result = run("promtool", "test", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_can_fail(tmp_path: Path) -> None:
    """The same unit tests against rules whose no-settlement and verifier-down alerts forget
    the cases with no series at all: promtool must report them."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            expr = " ".join(rule["expr"].split())
            expr = expr.replace(
                "unless sum(increase(landed_tasks_settled_total[30m])) > 0",
                "and sum(increase(landed_tasks_settled_total[30m])) == 0",
            )
            rule["expr"] = expr.replace(" or vector(0)", "")
    (tmp_path / "landed-rules.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "tests").mkdir()
    mutated = ("LandedNoSettlements", "LandedVerifierDown")
    for path in RULE_TESTS:  # the files that test the two alerts changed above
        if any(name in path.read_text() for name in mutated):
            (tmp_path / "tests" / path.name).write_text(path.read_text())
    result = run("promtool", "test", "rules", *sorted((tmp_path / "tests").iterdir()))
    assert result.returncode != 0
    report = result.stdout + result.stderr  # promtool writes the failures to stderr
    assert all(name in report for name in mutated), report


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


BURNS = [rule for rule in alerts() if rule["alert"].rsplit("Burn", 1)[-1] in ("1h", "6h", "3d")]


def test_each_slo_has_its_three_burn_rate_alerts() -> None:
    names = {rule["alert"] for rule in BURNS}
    for slo in ("LandedProofRate", "LandedSettleLatency"):
        assert {f"{slo}Burn{w}" for w in ("1h", "6h", "3d")} <= names


@pytest.mark.parametrize("rule", BURNS, ids=lambda rule: rule["alert"])
def test_every_burn_alert_is_tested_on_low_traffic(rule: dict[str, Any]) -> None:
    """A burn-rate alert stays quiet on fewer than min_events events, all of them bad."""
    low = [
        check
        for case in unit_tests()
        if case.get("name", "").startswith("low traffic")
        for check in case.get("alert_rule_test", [])
        if check["alertname"] == rule["alert"]
    ]
    assert low and all(not check["exp_alerts"] for check in low), rule["alert"]


@pytest.mark.parametrize("rule", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_has_a_summary_a_runbook_and_links(rule: dict[str, Any]) -> None:
    notes = rule["annotations"]
    assert notes["summary"] and notes["description"] and notes["about"]
    base, _, anchor = notes["runbook_url"].partition("#")
    assert base == generator().DEFAULT_RUNBOOKS and anchor == rule["alert"].lower()
    assert base.startswith("https://"), "an alert receiver opens the runbook link as it is"
    headings = re.findall(r"^## (\S+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)
    assert rule["alert"] in headings
    tasks = notes["tasks_url"]
    assert tasks.startswith("http://127.0.0.1:8233/namespaces/default/workflows?query=")
    assert "LandedVerdict%20%21%3D%20%22verified%22" in tasks
    for label, attribute in (("owner", "LandedOwner"), ("loop", "LandedLoop")):
        if f"$labels.{label}" in notes["about"]:
            assert f"{attribute}%20%3D%20%22{{{{ $labels.{label} | urlquery }}}}%22" in tasks


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
