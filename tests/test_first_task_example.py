"""The README's first task runs as written: examples/first_task's dev.sh starts a real
`landed dev` with the act, run.py prints the verdict the README shows, a second run attaches
instead of acting again, the README's not-done sentence is what a short write prints, and
`landed submit task.json --wait` settles verified."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "first_task"
BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    """The caller's shell without landed's or Temporal's settings, with the venv on PATH (the
    README activates it)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANDED_", "TEMPORAL_")) and not k.endswith("_METRICS_PORT")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def first_task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A copy of examples/first_task with `./dev.sh` running in it (one for this module's
    tests, each on a batch of its own); its ready event."""
    tmp_path = tmp_path_factory.mktemp("first-task")
    folder = tmp_path / "first_task"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("shop", ".landed"))
    err = (tmp_path / "dev.err").open("wb")
    dev = subprocess.Popen(
        [str(folder / "dev.sh"), "--headless", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        cwd=tmp_path,  # dev.sh enters its own folder, as the README runs it from there
        env=_env(),
    )
    try:
        yield folder, _ready(dev, tmp_path / "dev.err")
    finally:
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()
        assert dev.stdout is not None
        dev.stdout.close()
        err.close()


def _ready(dev: subprocess.Popen[str], err: Path) -> dict[str, Any]:
    assert dev.stdout is not None
    for line in dev.stdout:
        event: dict[str, Any] = json.loads(line)
        if event.get("event") == "ready":
            return event
    pytest.fail(f"landed dev exited before it was ready: {err.read_text()[-3000:]}")


def _run(argv: list[str], folder: Path, ready: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "TEMPORAL_ADDRESS": ready["temporal"]}
    return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=180)


def _count(folder: Path, batch: int) -> int:
    with sqlite3.connect(folder / "shop" / "orders.db") as conn:
        row = conn.execute("select count(*) from orders where batch = ?", [batch]).fetchone()
    return int(row[0])


def test_the_first_task_prints_the_readmes_verdict(first_task: tuple[Path, dict[str, Any]]) -> None:
    folder, ready = first_task
    expected = (EXAMPLE / "expected_output.txt").read_text()
    first = _run([sys.executable, "run.py"], folder, ready)
    assert (first.returncode, first.stdout) == (0, expected), first.stderr[-3000:]
    assert _count(folder, 7) == 3
    # The same task id again attaches to the settled task: the same verdict, no second act.
    again = _run([sys.executable, "run.py"], folder, ready)
    assert (again.returncode, again.stdout) == (0, expected), again.stderr[-3000:]
    assert _count(folder, 7) == 3


def test_a_short_write_prints_the_readmes_not_done_sentence(
    first_task: tuple[Path, dict[str, Any]],
) -> None:
    folder, ready = first_task
    said = re.search(r"`(NOT DONE: [^`]+)`", (ROOT / "README.md").read_text())
    assert said, "the README shows no NOT DONE line"
    script = (folder / "run.py").read_text()
    short = (
        script.replace('"batch": 7, "count": 3', '"batch": 9, "count": 2')
        .replace("params=[7]", "params=[9]")
        .replace("first-task-1", "first-task-9")
    )
    assert short.count("9") - script.count("9") == 3
    (folder / "short.py").write_text(short)
    done = _run([sys.executable, "short.py"], folder, ready)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == said.group(1)
    assert _count(folder, 9) == 2


def test_landed_submit_runs_the_example_task_file(first_task: tuple[Path, dict[str, Any]]) -> None:
    folder, ready = first_task
    done = _run([str(BIN / "landed"), "submit", "task.json", "--wait", "--json"], folder, ready)
    assert done.returncode == 0, done.stderr[-3000:]
    receipt = json.loads(done.stdout)["receipt"]
    assert receipt["verdict"] == "verified" and receipt["task_id"] == "first-task-2"
    assert _count(folder, 8) == 3


def test_an_mcp_client_gets_the_verdict_through_landed_mcp(
    first_task: tuple[Path, dict[str, Any]],
) -> None:
    # examples/agents/mcp_client.py starts `landed mcp` on stdio and runs a task file through it.
    folder, ready = first_task
    task = json.loads((folder / "task.json").read_text())
    task["task_id"] = "first-task-mcp"
    task["act"]["input"]["batch"] = 10
    task["proof_plan"][0]["probe"]["params"] = [10]
    (folder / "mcp_task.json").write_text(json.dumps(task))
    client = ROOT / "examples" / "agents" / "mcp_client.py"
    done = _run([sys.executable, str(client), "mcp_task.json"], folder, ready)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert (
        lines[0] == "DONE: the read-back found what the plan expects: 'add 3 orders' read 3 "
        "(count(3))."
    ), done.stdout
    assert lines[1:4] == ["task: first-task-mcp", "verdict: verified", "rung: verified"]
    assert _count(folder, 10) == 3


def test_the_pydantic_ai_example_hands_the_models_call_to_landed(
    first_task: tuple[Path, dict[str, Any]],
) -> None:
    # pydantic-ai's "test" model calls every tool with made-up arguments (no network): this one
    # names no proof plan, and landed's refusal, naming the fix, is what the model reads.
    folder, ready = first_task
    example = ROOT / "examples" / "agents" / "pydantic_ai_agent.py"
    env = {**_env(), "TEMPORAL_ADDRESS": ready["temporal"], "LANDED_EXAMPLE_MODEL": "test"}
    done = subprocess.run(
        [sys.executable, str(example)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NOT DONE: the action was not started: " in done.stdout, done.stdout
