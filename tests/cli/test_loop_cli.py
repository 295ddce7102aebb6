"""``landed loop create``'s bad input: refused before anything is created, with the fix named
(exit 2, a JSON error under --json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from landed.cli import app

TEMPLATE: dict[str, Any] = {
    "owner": "agent-a",
    "outcome": "the feed's rows are in the rows table",
    "act": {"name": "test.rows"},
    "proof_plan": [
        {
            "action": "insert rows",
            "probe": {"kind": "record", "source": "rows-db", "query": "select count(*) from rows"},
            "expect": {"type": "count", "value": 1},
        }
    ],
}


def create(tmp_path: Path, every: str, template: dict[str, Any]) -> tuple[int, str, str]:
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(template))
    # An address nothing listens on: bad input must be refused before any connection.
    args = ["loop", "create", "feed", "--every", every, "--task", str(path), "--json"]
    result = CliRunner().invoke(app, [*args, "--address", "127.0.0.1:9"])
    return result.exit_code, result.stdout, result.stderr


def test_a_cadence_of_zero_or_of_years_exits_2_naming_the_fix(tmp_path: Path) -> None:
    for every in ("0m", "3650d"):
        code, out, err = create(tmp_path, every, TEMPLATE)
        assert code == 2, (out, err)
        assert json.loads(out)["error"] == "invalid loop"
        assert "outside 1 minute to 31 days; give one such as 15m" in json.loads(out)["message"]


def test_a_repair_whose_own_plan_is_empty_exits_2_naming_the_fix(tmp_path: Path) -> None:
    template = TEMPLATE | {"repair": {"outcome": "the feed flows", "proof_plan": []}}
    code, out, _ = create(tmp_path, "15m", template)
    assert code == 2
    assert "give repair.proof_plan at least one read-back step" in json.loads(out)["message"]


def test_a_template_with_a_task_id_exits_2(tmp_path: Path) -> None:
    code, out, _ = create(tmp_path, "15m", TEMPLATE | {"task_id": "fixed"})
    assert code == 2
    assert "derived from the loop and its scheduled time" in json.loads(out)["message"]
