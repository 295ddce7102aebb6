"""The README's first task runs as written: examples/first_task's dev.sh starts a real
`landed dev` with the act, run.py prints the verdict the README shows, a second run attaches
instead of acting again, the README's not-done sentence is what a short write prints, and
`landed submit task.json --wait` settles verified; the agents examples get landed's verdict through
`landed mcp`, pydantic-ai, and a workflow of their own that runs the task as its child."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.examples import EXAMPLES, ROOT, Example, example_stack, user_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


@pytest.fixture(scope="module")
def first_task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    """examples/first_task with `./dev.sh` running in a copy of it (one for this module's
    tests, each on a batch of its own)."""
    with example_stack("first_task", tmp_path_factory.mktemp("first-task")) as example:
        yield example


def _count(folder: Path, batch: int) -> int:
    with sqlite3.connect(folder / "shop" / "orders.db") as conn:
        row = conn.execute("select count(*) from orders where batch = ?", [batch]).fetchone()
    return int(row[0])


def test_the_first_task_prints_the_readmes_verdict(first_task: Example) -> None:
    folder = first_task.folder
    expected = first_task.expected()
    first = first_task.run("python", "run.py")
    assert (first.returncode, first.stdout) == (0, expected), first.stderr[-3000:]
    assert _count(folder, 7) == 3
    # The same task id again attaches to the settled task: the same verdict, no second act.
    again = first_task.run("python", "run.py")
    assert (again.returncode, again.stdout) == (0, expected), again.stderr[-3000:]
    assert _count(folder, 7) == 3


def test_a_short_write_prints_the_readmes_not_done_sentence(
    first_task: Example,
) -> None:
    folder = first_task.folder
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
    done = first_task.run("python", "short.py")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == said.group(1)
    assert _count(folder, 9) == 2


def test_landed_submit_runs_the_example_task_file(first_task: Example) -> None:
    folder = first_task.folder
    done = first_task.run("landed", "submit", "task.json", "--wait", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    receipt = json.loads(done.stdout)["receipt"]
    assert receipt["verdict"] == "verified" and receipt["task_id"] == "first-task-2"
    assert _count(folder, 8) == 3


def test_an_mcp_client_gets_the_verdict_through_landed_mcp(
    first_task: Example,
) -> None:
    # examples/agents/mcp_client.py starts `landed mcp` on stdio and runs a task file through it.
    folder = first_task.folder
    task = json.loads((folder / "task.json").read_text())
    task["task_id"] = "first-task-mcp"
    task["act"]["input"]["batch"] = 10
    task["proof_plan"][0]["probe"]["params"] = [10]
    (folder / "mcp_task.json").write_text(json.dumps(task))
    client = EXAMPLES / "agents" / "mcp_client.py"
    done = first_task.run("python", str(client), "mcp_task.json")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert (
        lines[0] == "DONE: the read-back found what the plan expects: 'add 3 orders' read 3 "
        "(count(3))."
    ), done.stdout
    assert lines[1:4] == ["task: first-task-mcp", "verdict: verified", "rung: verified"]
    assert _count(folder, 10) == 3


def test_the_pydantic_ai_example_hands_the_models_call_to_landed(
    first_task: Example,
) -> None:
    # pydantic-ai's "test" model calls every tool with made-up arguments (no network): this one
    # names no proof plan, and landed's refusal, naming the fix, is what the model reads.
    folder = first_task.folder
    example = EXAMPLES / "agents" / "pydantic_ai_agent.py"
    env = {**user_env(), "TEMPORAL_ADDRESS": first_task.ready["temporal"]}
    env["LANDED_EXAMPLE_MODEL"] = "test"
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


def test_an_agent_on_temporal_runs_the_task_as_its_child(first_task: Example) -> None:
    # examples/agents/temporal_agent.py: the agent's own workflow starts landed's task as a child.
    example = EXAMPLES / "agents" / "temporal_agent.py"
    done = first_task.run("python", str(example), "14")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "DONE: the read-back found what the plan expects: 'add 3 orders' read 3 (count(3))."
    ], done.stdout
    assert _count(first_task.folder, 14) == 3


def test_the_pydantic_ai_agent_on_temporal_hands_the_models_call_to_landed(
    first_task: Example,
) -> None:
    # The "test" model again, in a durable agent: the tool runs in the agent's workflow, and
    # landed's refusal of its made-up call is what the model reads and the workflow returns.
    example = EXAMPLES / "agents" / "pydantic_ai_temporal_agent.py"
    env = {**user_env(), "TEMPORAL_ADDRESS": first_task.ready["temporal"]}
    env["LANDED_EXAMPLE_MODEL"] = "test"
    done = subprocess.run(
        [sys.executable, str(example)],
        cwd=first_task.folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NOT DONE: the action was not started: " in done.stdout, done.stdout
