"""An agent that runs on Temporal itself, for the child-workflow tests: ``ShopAgent`` runs the
task it is given as landed's task through ``run_task_as_child``. Workflow code, in a module of
its own so the workflow sandbox can import it again (and free of pydantic-ai, which only the
pydantic-ai plugin's sandbox passes through: helpers.pydantic_agent)."""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from landed.agents.temporal import run_task_as_child
    from landed.receipts.model import Receipt
    from landed.task.spec import TaskSpec

__all__ = ["SHOP_AGENT", "ShopAgent", "ShopOrder"]

SHOP_AGENT = "TestShopAgent"


class ShopOrder(BaseModel):
    """What the agent is asked: a task to run, and the runner's queue to run it on."""

    task: TaskSpec
    runner_task_queue: str


@workflow.defn(name=SHOP_AGENT)
class ShopAgent:
    @workflow.run
    async def run(self, order: ShopOrder) -> Receipt:
        return await run_task_as_child(order.task, runner_task_queue=order.runner_task_queue)
