"""The committed dashboards: what the generator writes, importable anywhere, and every panel's
PromQL valid against a real Prometheus."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.grafana import BOARDS, ROOT, panel_queries, substitute
from helpers.prom import prometheus

pytestmark = pytest.mark.slow  # a Python process with the SDK; a Prometheus server

RULES = ROOT / "deploy" / "prometheus" / "landed-rules.yml"


def check(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dashboards", "--check"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_committed_json_is_what_the_generator_writes() -> None:
    result = check(ROOT)
    assert result.returncode == 0, result.stderr


def test_a_hand_edited_dashboard_is_caught(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "dashboards", tmp_path / "dashboards")
    edited = tmp_path / "dashboards" / "landed-fleet.json"
    board = json.loads(edited.read_text())
    board["title"] = "edited by hand"
    edited.write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")
    result = check(tmp_path)
    assert result.returncode == 1
    assert "landed-fleet.json differs" in result.stderr and "landed-owner" not in result.stderr


@pytest.mark.parametrize("path", BOARDS, ids=lambda p: p.name)
def test_every_panel_reads_the_datasource_variable(path: Path) -> None:
    board = json.loads(path.read_text())
    names = [v["name"] for v in board["templating"]["list"]]
    assert "datasource" in names
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert panels
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    for panel in panels:
        assert panel["targets"], panel["title"]
        refs = [panel["datasource"], *(t["datasource"] for t in panel["targets"])]
        assert all(ref == {"type": "prometheus", "uid": "${datasource}"} for ref in refs)


def test_every_panel_query_is_valid_promql(tmp_path: Path) -> None:
    queries = [q for path in BOARDS for q in panel_queries(path)]
    assert len(queries) >= 20
    with prometheus(tmp_path, rule_files=[RULES]) as prom:
        for _title, expr in queries:
            prom.query(substitute(expr, {"owner": "agent-a"}))  # raises on a PromQL error
        with pytest.raises(ValueError, match="parse error"):
            prom.query("sum by (owner (landed_done_claimed_total)")


def _panels(name: str) -> dict[str, dict[str, object]]:
    board = json.loads((ROOT / "dashboards" / name).read_text())
    return {p["title"]: p for p in board["panels"] if p["type"] != "row"}


def test_panels_empty_on_a_default_setup_say_why_naming_the_setting() -> None:
    fleet = _panels("landed-fleet.json")
    cost = fleet["Cost per verified task"]["fieldConfig"]["defaults"]["noValue"]  # type: ignore[index]
    queue = fleet["Verifier queue"]["fieldConfig"]["defaults"]["noValue"]  # type: ignore[index]
    assert "LANDED_RUNNER_VERIFY_USD_PER_SECOND" in cost
    assert "LANDED_VERIFIER_METRICS_PORT" in queue
    owner = _panels("landed-owner.json")["Cost per verified task"]
    assert owner["fieldConfig"]["defaults"]["noValue"] == cost  # type: ignore[index]


def test_the_slo_dashboard_shows_objective_budget_and_burn_per_owner() -> None:
    slo = _panels("landed-slo.json")
    exprs = {t["expr"] for p in slo.values() for t in p["targets"]}  # type: ignore[attr-defined]
    for record in ("slo_objective", "slo_budget_remaining", "slo_burn_rate:rate1h"):
        assert any(record in e and 'slo="proof-rate"' in e for e in exprs), record
    burn = slo["Burn rate per owner (1h and 6h)"]["targets"]
    assert all("{{owner}}" in t["legendFormat"] for t in burn)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("landed-slo.json", "Task duration (p95) with exemplars"),
        ("landed-fleet.json", "Probe latency (p95)"),
    ],
)
def test_exemplars_link_to_the_trace_and_the_tasks_web_ui_page(name: str, title: str) -> None:
    panel = _panels(name)[title]
    assert all(t["exemplar"] for t in panel["targets"])  # type: ignore[attr-defined]
    urls = [link["url"] for link in panel["fieldConfig"]["defaults"]["links"]]  # type: ignore[index]
    assert urls == [
        "${trace_url}${__data.fields.trace_id}",
        "${temporal_ui}/workflows/${__data.fields.task_id}",
    ]
