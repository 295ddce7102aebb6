"""The model's intended action becomes a landed task: its own proof plan, or an operator's named
contract with the model's values; anything else is refused with the fix. Pure code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from landed.agents.intent import Intent, IntentError, intent_task, to_task
from landed.task.claim_contracts_lint import parse_claim_contracts

PLAN = [
    {
        "action": "add 3 orders",
        "probe": {
            "kind": "record",
            "source": "shop-db",
            "query": "select count(*) from orders where batch = ?",
            "params": [7],
        },
        "expect": {"type": "count", "value": 3},
    }
]
CONTRACTS = {
    "contracts": {
        "orders.created": {
            "params": {"batch": "integer", "count": "integer"},
            "outcome": "{count} orders of batch {batch} are in the orders table",
            "proof_plan": [
                {
                    "action": "add the orders",
                    "probe": {
                        "kind": "record",
                        "source": "shop-db",
                        "query": "select count(*) from orders where batch = ?",
                        "params": [{"param": "batch"}],
                    },
                    "expect": {"type": "count", "value": {"param": "count"}},
                }
            ],
        }
    }
}


def _intent(**over: Any) -> Intent:
    base: dict[str, Any] = {
        "act": "shop.add_orders",
        "input": {"batch": 7, "count": 3},
        "outcome": "3 orders of batch 7 are in the orders table",
        "proof_plan": PLAN,
    }
    return Intent.model_validate({**base, **over})


def _contracts() -> Any:
    return parse_claim_contracts(json.dumps(CONTRACTS).encode(), "contracts.json")


def test_the_models_own_plan_becomes_the_tasks_plan() -> None:
    spec = to_task(_intent(), owner="shop-agent")
    assert spec.owner == "shop-agent" and spec.task_id.startswith("shop-agent-")
    assert spec.act.name == "shop.add_orders" and spec.act.input == {"batch": 7, "count": 3}
    assert [c.model_dump(mode="json")["probe"]["params"] for c in spec.proof_plan] == [[7]]
    # Each call is its own task, unless the model names the one to attach to.
    assert to_task(_intent(), owner="a").task_id != to_task(_intent(), owner="a").task_id
    assert to_task(_intent(task_id="again-1"), owner="a").task_id == "again-1"
    # An owner may hold characters a task id may not: the id keeps what it can of the name.
    spaced = to_task(_intent(), owner="shop bot [eu]").task_id
    assert spaced.startswith("shop-bot-eu-") and len(spaced) == len("shop-bot-eu-") + 12
    # Workflow code draws the id's random part from its own source: the same on replay.
    token = "0123456789abcdef0123"
    assert to_task(_intent(), owner="a", id_token=token).task_id == "a-0123456789ab"
    assert intent_task(_intent().model_dump(), owner="a", id_token=token).task_id == (
        "a-0123456789ab"
    )
    with pytest.raises(IntentError, match="act"):
        intent_task({"input": {}}, owner="a")


def test_a_named_contract_is_the_operators_plan_with_the_models_values() -> None:
    intent = _intent(proof_plan=None, outcome="", contract="orders.created")
    intent.params = {"batch": 9, "count": 2}
    spec = to_task(intent, owner="a", contracts=_contracts(), own_plans=False)
    (step,) = [c.model_dump(mode="json") for c in spec.proof_plan]
    assert step["probe"]["params"] == [9] and step["expect"]["value"] == 2
    assert spec.outcome == "2 orders of batch 9 are in the orders table"


@pytest.mark.parametrize(
    ("over", "own_plans", "said"),
    [
        ({"contract": "orders.created"}, True, "not both"),
        ({"proof_plan": None}, True, "say how to read the result back"),
        ({"outcome": ""}, True, "say the outcome"),
        ({}, False, "only by the operator's contracts"),
        ({"proof_plan": None, "contract": "orders.gone"}, True, "declared: orders.created"),
        ({"proof_plan": None, "contract": "orders.created"}, True, "needs the parameter"),
        ({"act": "shop.add_orders", "task_id": "no spaces"}, True, "task_id"),
        ({"proof_plan": [{"action": "x"}]}, True, "proof_plan.0"),
    ],
)
def test_an_action_that_cannot_be_a_task_is_refused_naming_the_fix(
    over: dict[str, Any], own_plans: bool, said: str
) -> None:
    with pytest.raises(IntentError, match=said):
        to_task(_intent(**over), owner="a", contracts=_contracts(), own_plans=own_plans)
