"""``landed guard`` with before-states: taken when a Claude Code prompt is submitted, judged at
Stop; and an empty or missing contracts file blocks unless --allow-empty."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from landed.probes.guard import GuardResult, run_guard
from landed.probes.snapshot import turn_path

LANDED = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "landed")


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def rows(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "rows.txt"
    path.write_text(f"{n}\n")
    return path


def contracts(tmp_path: Path, *expects: dict[str, object]) -> Path:
    path = tmp_path / "contracts.jsonl"
    probe = {"kind": "command", "argv": ["cat", str(tmp_path / "rows.txt")]}
    path.write_text(
        "".join(
            json.dumps({"action": "insert order lines", "probe": probe, "expect": e}) + "\n"
            for e in expects
        )
    )
    return path


def hook(tmp_path: Path, event: str, session: str = "s-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
            "hook_event_name": event,
            "stop_hook_active": False,
        }
    )


def turn(tmp_path: Path, file: Path, event: str, session: str = "s-1") -> GuardResult:
    return run_guard(
        str(file), hook="claude-code", read_stdin=lambda n: hook(tmp_path, event, session)
    )


def test_an_outcome_already_there_when_the_prompt_was_submitted_blocks_as_vacuous(
    tmp_path: Path,
) -> None:
    rows(tmp_path, 45)
    file = contracts(tmp_path, {"type": "count", "value": 45})
    prompt = turn(tmp_path, file, "UserPromptSubmit")
    assert not prompt.block and prompt.captured
    stop = turn(tmp_path, file, "Stop")
    assert stop.block
    assert "vacuous" in "\n".join(stop.reasons)
    # Another session took no before-state: judged on the value alone, and said so.
    other = turn(tmp_path, file, "Stop", session="s-2")
    assert not other.block


def test_a_change_is_judged_at_stop_against_the_prompt_s_before_state(tmp_path: Path) -> None:
    rows(tmp_path, 20)
    file = contracts(tmp_path, {"type": "change", "value": 45})
    turn(tmp_path, file, "UserPromptSubmit")
    rows(tmp_path, 65)
    assert not turn(tmp_path, file, "Stop").block
    counted = contracts(tmp_path, {"type": "count", "value": 45})
    rows(tmp_path, 20)
    turn(tmp_path, counted, "UserPromptSubmit")
    rows(tmp_path, 65)
    stop = turn(tmp_path, counted, "Stop")
    assert stop.block and "duplicated" in "\n".join(stop.reasons)


def test_an_edited_before_state_blocks(tmp_path: Path) -> None:
    rows(tmp_path, 45)
    file = contracts(tmp_path, {"type": "count", "value": 45})
    turn(tmp_path, file, "UserPromptSubmit")
    kept = turn_path("s-1", file)
    kept.write_text(kept.read_text().replace('"value": 45', '"value": 0'))
    stop = turn(tmp_path, file, "Stop")
    assert stop.block and "does not verify" in stop.reasons[0]


def test_an_empty_or_missing_contracts_file_blocks_unless_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    missing = tmp_path / "missing.jsonl"
    for path in (empty, missing):
        assert run_guard(str(path)).block
        allowed = run_guard(str(path), allow_empty=True)
        assert not allowed.block and allowed.notes


@pytest.mark.slow
def test_the_hooks_as_claude_code_runs_them(tmp_path: Path) -> None:
    """UserPromptSubmit exits 0 with nothing on stdout (it would be added to the prompt);
    Stop exits 2 with the reason on stderr."""
    rows(tmp_path, 45)
    contracts(tmp_path, {"type": "count", "value": 45})
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANDED_")}
    command = [LANDED, "guard", "--contracts", "contracts.jsonl", "--hook", "claude-code"]
    prompt = subprocess.run(
        command,
        input=hook(tmp_path, "UserPromptSubmit"),
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )
    assert prompt.returncode == 0 and prompt.stdout == "", prompt.stderr
    stop = subprocess.run(
        command, input=hook(tmp_path, "Stop"), capture_output=True, text=True, env=env, timeout=90
    )
    assert stop.returncode == 2 and "vacuous" in stop.stderr, stop.stderr
