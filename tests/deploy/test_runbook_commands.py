"""Every ``landed ...`` command docs/runbooks.md names exists and runs, as the installed command,
on a ledger the runner wrote with signed heads: on call never meets a command that is not there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.chain import seed

from landed.signing import KeyPair

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS = ROOT / "docs" / "runbooks.md"


def named_commands() -> list[str]:
    """Each distinct `landed ...` code span of the runbooks, in order of first mention."""
    spans = re.findall(r"`(landed [^`]+)`", RUNBOOKS.read_text())
    return list(dict.fromkeys(" ".join(span.split()) for span in spans))


def landed(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("landed")
    return subprocess.run(
        [str(exe), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_runbooks_name_the_commands_on_call_needs() -> None:
    names = named_commands()
    assert "landed receipt TASK" in names and "landed ledger verify --trust KEY" in names
    assert len(names) >= 4


@pytest.mark.parametrize("command", named_commands())
async def test_every_command_in_the_runbooks_runs(command: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    key = KeyPair.generate()
    key.save(tmp_path / "head-keys")
    await seed(f"sqlite:///{ledger}", key)  # receipts chain-0 .. chain-5, heads signed
    places = {"TASK": "chain-2", "KEY": str(tmp_path / "head-keys")}
    argv = [places.get(word, word) for word in shlex.split(command)][1:]
    env = {**os.environ, "LANDED_LEDGER_URL": f"sqlite:///{ledger}"}
    if argv[:1] == ["check"]:  # it reads the export the runbook makes just before it
        made = landed(["receipts", "export", "-o", "receipts.jsonl"], tmp_path, env)
        assert made.returncode == 0, made.stderr
    result = landed(argv, tmp_path, env)
    # 0, or 1 for a finding it reports (a done claim under its bar): never a usage error (2),
    # an unreadable ledger (3) or a crash.
    assert result.returncode in (0, 1), f"{command}: {result.returncode}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() or (tmp_path / "receipts.jsonl").is_file()


async def test_landed_receipt_shows_a_task_and_says_when_there_is_none(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    key = KeyPair.generate()
    await seed(f"sqlite:///{ledger}", key)
    env = {**os.environ, "LANDED_LEDGER_URL": f"sqlite:///{ledger}"}
    shown = landed(["receipt", "chain-3"], tmp_path, env)
    assert shown.returncode == 0, shown.stderr
    assert "task chain-3" in shown.stdout and "verdict verified" in shown.stdout
    assert "/namespaces/default/workflows/chain-3" in shown.stdout
    rows = landed(["receipt", "chain-3", "--json"], tmp_path, env)
    assert [json.loads(line)["task_id"] for line in rows.stdout.splitlines()] == ["chain-3"]
    missing = landed(["receipt", "no-such-task"], tmp_path, env)
    assert missing.returncode == 1 and "no receipt of task 'no-such-task'" in missing.stderr
    gone = landed(["receipt", "chain-3", "--ledger", str(tmp_path / "none.db")], tmp_path, env)
    assert gone.returncode == 3
