"""Usage errors Click finds itself (unknown option, wrong type, missing argument): JSON under
--json for every command, Click's own text otherwise; exit 2 either way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landed.cli import app

LANDED = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["verify", "--probe", "echo 1", "--count", "notanint"], "Invalid value for '--count'"),
        (["verify", "--kind"], "No such option: --kind"),
        (["submit"], "Missing argument"),
        (["submit", "task.json", "--wait-for", "3"], "No such option: --wait-for"),
        (["keys", "new", "--zzz"], "No such option: --zzz"),
        (["receipts", "export", "--bogus"], "No such option: --bogus"),
    ],
)
def test_a_refused_option_under_json_is_one_json_object(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    answer = json.loads(result.stdout)
    assert answer["error"] == "usage" and says in answer["message"], answer
    assert f"landed {args[0]}" in answer["message"]  # names the help to read
    assert says in " ".join(result.stderr.split())


def test_without_json_click_says_it_as_usual() -> None:
    result = CliRunner().invoke(app, ["verify", "--probe", "echo 1", "--count", "notanint"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Invalid value for '--count'" in result.stderr
    assert "Usage: landed verify" in result.stderr


def test_json_after_a_double_dash_is_an_argument_not_the_flag() -> None:
    result = CliRunner().invoke(app, ["verify", "--nope", "--", "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""


@pytest.mark.slow
def test_the_installed_command_answers_in_json_too() -> None:
    done = subprocess.run(
        [LANDED, "verify", "--json", "--probe", "echo 1", "--count", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"] == "usage"
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_landed_demo_that_cannot_use_its_dir_says_so_in_json_with_exit_3(tmp_path: Path) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")
    done = subprocess.run(
        [LANDED, "demo", "--dir", str(taken), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["error"] == "start"
    assert "Traceback" not in done.stderr and str(taken) in done.stderr
