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
