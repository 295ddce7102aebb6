"""``landed plan lint`` and ``landed submit --lint``: reports, exit codes, refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from landed.cli import app


def task(expect: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "task_id": "lint-1",
        "owner": "agent-a",
        "outcome": "45 rows of batch b are in the rows table",
        "act": {"name": "test.rows"},
        "proof_plan": [
            {
                "action": "insert 45 rows",
                "probe": {
                    "kind": "record",
                    "source": "rows-db",
                    "query": "select count(*) from rows where batch = 'b'",
                },
                "expect": expect,
            }
        ],
        **fields,
    }


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_a_plan_that_catches_every_bad_write_exits_0(tmp_path: Path) -> None:
    code, out, _ = run(
        "plan", "lint", write(tmp_path / "t.json", task({"type": "count", "value": 45}))
    )
    assert code == 0, out
    assert "catches every bad write tried" in out and "CALLED DONE" not in out


def test_a_plan_that_would_call_a_bad_write_done_exits_1_and_names_it(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", task({"type": "at_least", "value": 45}))
    code, out, _ = run("plan", "lint", path)
    assert code == 1
    assert "CALLED DONE double" in out and "would call a bad write done" in out
    code, out, _ = run("plan", "lint", "--json", path)
    report = json.loads(out)
    assert code == 1 and report["calls_bad_write_done"] is True
    assert report["steps"][0]["where"] == "proof_plan.0"
    assert report["steps"][0]["called_done"] == ["double"]


def test_guard_contracts_are_linted_without_a_pre_read(tmp_path: Path) -> None:
    line = json.dumps(task({"type": "count", "value": 45})["proof_plan"][0])
    path = tmp_path / "contracts.jsonl"
    path.write_text(line + "\n")
    code, out, _ = run("plan", "lint", "--json", str(path))
    report = json.loads(out)
    assert code == 1 and report["pre_read"] is False
    assert report["steps"][0]["where"] == "line 1"
    assert report["steps"][0]["called_done"] == ["already there"]


@pytest.mark.slow
def test_an_invalid_file_exits_3_naming_the_problem(tmp_path: Path) -> None:
    code, _, err = run("plan", "lint", write(tmp_path / "t.json", {"task_id": "x"}))
    assert code == 3 and "owner" in err
    code, out, _ = run("plan", "lint", "--json", str(tmp_path / "missing.jsonl"))
    assert code == 3 and json.loads(out)["error"] == "unreadable contracts"
    assert "exit codes" in run("plan", "lint", "--help")[1].lower()


def test_submit_lint_refuses_a_plan_that_would_call_a_bad_write_done(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", task({"type": "at_least", "value": 45}))
    # Nowhere to submit to: a refusal exits before any connection is tried.
    code, out, err = run("submit", "--lint", "--json", "--address", "127.0.0.1:1", path)
    assert code == 3, err
    answer = json.loads(out)
    assert answer["error"] == "plan lint refused"
    assert answer["lint"]["steps"][0]["called_done"] == ["double"]
    assert "--force" in err


@pytest.mark.slow
def test_submit_lint_force_submits_a_refused_plan_anyway(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", task({"type": "at_least", "value": 45}))
    code, _, err = run("submit", "--lint", "--force", "--address", "127.0.0.1:1", path)
    # Past the lint: the submission itself fails, as no Temporal answers there.
    assert "--force given, submitting anyway" in err
    assert code == 1 and "cannot reach Temporal" in err
