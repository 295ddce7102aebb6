"""The agents room without a Temporal server: the MCP server's tools (listed, none approves),
bad input as a tool error naming the fix, the words a model reads, and ``import landed`` that
stays free of the frameworks."""

from __future__ import annotations

import json
import subprocess
import sys

import mcp
import pytest
from helpers.receipts import settled_receipt

import landed
from landed.agents import words
from landed.agents.action import make_action
from landed.agents.mcp_server import TOOLS, build_server
from landed.agents.service import AgentToolError, LandedTools
from landed.temporal.handle import TaskStatus


def _offline() -> LandedTools:
    """Tools over a client with no Temporal behind it: what they refuse, they refuse before
    any call to Temporal (an attempt would fail on the missing connection)."""
    return LandedTools(landed.Client(object(), check_roles=False))  # type: ignore[arg-type]


def _receipt(verdict: str, result: str, value: int) -> landed.Receipt:
    return settled_receipt("t-words", verdict, result, value)


async def test_the_server_lists_its_tools_and_none_approves() -> None:
    async with mcp.Client(build_server(_offline())) as client:
        listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    assert names == list(TOOLS)
    assert not [n for n in names if "approve" in n and n != "request_approval"]


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("submit", {"task_spec_json": "{not json"}, "not JSON"),
        ("run", {"task_spec_json": '{"task_id": "x"}'}, "owner"),
        ("run", {"task_spec_json": "{}", "timeout_s": 0}, "timeout_s must be above 0"),
    ],
)
async def test_bad_input_is_a_tool_error_naming_the_fix(
    tool: str, arguments: dict[str, object], said: str
) -> None:
    async with mcp.Client(build_server(_offline())) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    (content,) = result.content
    assert said in getattr(content, "text", "")


async def test_a_refused_action_comes_back_to_the_model_as_not_done() -> None:
    with pytest.raises(AgentToolError, match="say how to read the result back"):
        await _offline().act({"act": "shop.add_orders", "outcome": "3 orders"})
    # The framework tools' function hands the refusal to the model as text, so it can fix it.
    act = make_action(_offline())
    said = await act(act="shop.add_orders", input={}, outcome="3 orders")
    assert said.startswith("NOT DONE: the action was not started: say how to read the result")
    said = await act(act="", input={}, outcome="3 orders", proof_plan=[{"action": "x"}])
    assert said.startswith("NOT DONE: the action was not started: ") and "act" in said


def test_every_answer_starts_with_the_verdict_in_plain_words() -> None:
    done = words.receipt_text(_receipt("verified", "pass", 3), with_json=True).splitlines()
    assert done[0].startswith("DONE: the read-back found what the plan expects")
    assert done[1:4] == ["task: t-words", "verdict: verified", "rung: unknown"]
    assert json.loads(done[4].removeprefix("receipt: "))["verdict"] == "verified"
    short = words.receipt_text(_receipt("planned", "mismatch", 2)).splitlines()
    assert short[0] == (
        "NOT DONE: the read-back of 'add 3 orders' found 2 where count(3) was expected (mismatch)."
    )


def test_a_task_still_running_or_closed_unsettled_is_not_done() -> None:
    running = TaskStatus(task_id="t-1", execution="RUNNING", step="acting", rung="planned")
    assert words.status_text(running).splitlines()[:3] == [
        "NOT DONE: the task has not settled yet (step acting, RUNNING).",
        "task: t-1",
        "step: acting",
    ]
    closed = TaskStatus(task_id="t-2", execution="TERMINATED", step="closed", rung="unknown")
    assert words.status_text(closed).splitlines()[0] == (
        "NOT DONE: the task ended TERMINATED without a settled receipt; to run it again, submit "
        "it under a new task_id."
    )


def test_a_child_task_that_ended_unsettled_is_not_done() -> None:
    said = words.unsettled_text("t-3", "terminated").splitlines()
    assert said == [
        "NOT DONE: the task ended (terminated) without a settled receipt; to run it again, "
        "submit it under a new task_id.",
        "task: t-3",
    ]


def test_import_landed_leaves_the_frameworks_out() -> None:
    probe = (
        "import sys, landed\n"
        "landed.Client, landed.Receipt, landed.TaskSpec\n"
        "print(sorted(m for m in ('mcp', 'pydantic_ai', 'agents', 'openai') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
