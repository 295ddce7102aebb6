"""The pydantic-ai and OpenAI Agents SDK tools against a real landed stack (a Temporal dev
server and the three roles): a scripted model (no network) calls the tool twice, and landed's
DONE and NOT DONE verdicts, not the act's own "done", are what reaches the model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.pydantic_agent import rows_call
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, row_count

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


CONTRACTS = {
    "contracts": {
        "rows.added": {
            "params": {"batch": "string", "count": "integer"},
            "outcome": "{count} rows of batch {batch} are in the rows table",
            "proof_plan": [
                {
                    "action": "insert the rows",
                    "probe": {
                        "kind": "record",
                        "source": "rows-db",
                        "query": "select count(*) from rows where batch = ?",
                        "params": [{"param": "batch"}],
                    },
                    "expect": {"type": "count", "value": {"param": "count"}},
                }
            ],
        }
    }
}


def _check(answers: list[str], db: Path, tag: str) -> None:
    """Both verdicts reached the model: the full write DONE, the short one NOT DONE."""
    assert len(answers) == 2, answers
    assert answers[0].startswith("DONE: the read-back found what the plan expects"), answers[0]
    assert answers[1].splitlines()[0] == (
        "NOT DONE: the read-back of 'insert 3 rows' found 2 where count(3) was expected (mismatch)."
    ), answers[1]
    assert row_count(db, f"full-{tag}") == 3 and row_count(db, f"short-{tag}") == 2


def _scripted(calls: list[dict[str, Any]], seen: list[str]) -> Any:
    """A pydantic-ai FunctionModel that makes ``calls`` one by one, keeping in ``seen`` what
    each call returned to it, then answers with the last return's first line."""
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [
            str(p.content)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        seen[:] = returned
        if len(returned) < len(calls):
            args = calls[len(returned)]
            return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, args)])
        return ModelResponse(parts=[TextPart(returned[-1].splitlines()[0])])

    return FunctionModel(model)


async def test_pydantic_ai_model_gets_landeds_verdicts(temporal_dev: str, tmp_path: Path) -> None:
    from pydantic_ai import Agent

    from landed.agents.pydantic_ai import landed_tool

    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    seen: list[str] = []
    model = _scripted([rows_call(f"full-{tag}", 3), rows_call(f"short-{tag}", 2)], seen)
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        agent = Agent(model, tools=[landed_tool(roles.client, owner="pyd-agent")])
        result = await agent.run("add the rows")
    _check(seen, db, tag)
    assert result.output.startswith("NOT DONE: ")


async def test_a_model_held_to_the_operators_contracts(temporal_dev: str, tmp_path: Path) -> None:
    from pydantic_ai import Agent

    from landed.agents.pydantic_ai import landed_tool
    from landed.task.claim_contracts_lint import parse_claim_contracts

    contracts = parse_claim_contracts(json.dumps(CONTRACTS).encode(), "contracts.json")
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    by_contract = {
        "act": "test.rows",
        "input": {"batch": f"named-{tag}", "write": 3},
        "contract": "rows.added",
        "params": {"batch": f"named-{tag}", "count": 3},
    }
    seen: list[str] = []
    model = _scripted([rows_call(f"own-{tag}", 3), by_contract], seen)
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        tool = landed_tool(roles.client, owner="pyd-agent", contracts=contracts, own_plans=False)
        await Agent(model, tools=[tool]).run("add the rows")
    assert seen[0] == (
        "NOT DONE: the action was not started: this tool reads results back only by the "
        "operator's contracts: name one in contract, with its params"
    )
    assert seen[1].startswith("DONE: the read-back found what the plan expects: 'insert the rows'")
    assert row_count(db, f"own-{tag}") == 0 and row_count(db, f"named-{tag}") == 3


async def test_openai_agents_model_gets_landeds_verdicts(temporal_dev: str, tmp_path: Path) -> None:
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    from landed.agents.openai_agents import landed_function_tool

    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    model = ScriptedModel(
        [
            [function_call("landed_act", rows_call(f"full-{tag}", 3), call_id="c1")],
            [function_call("landed_act", rows_call(f"short-{tag}", 2), call_id="c2")],
            [assistant_message("reported")],
        ]
    )
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        tool = landed_function_tool(roles.client, owner="oai-agent")
        agent = Agent(name="shop", instructions="add rows", model=model, tools=[tool])
        result = await Runner.run(
            agent, "add the rows", run_config=RunConfig(tracing_disabled=True)
        )
    model.assert_complete()
    assert result.final_output == "reported"
    last = model.last_call
    assert last is not None
    outputs = [
        str(item["output"])
        for item in last.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    _check(outputs, db, tag)
