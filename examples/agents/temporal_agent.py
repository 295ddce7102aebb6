"""An agent that runs on Temporal itself: its workflow decides an action and runs it as landed's
task, a child workflow on the runner's queue, then reports landed's verdict, not its own
belief. With examples/first_task's ./dev.sh running: python temporal_agent.py [BATCH]"""

import sys
import uuid

from temporalio import workflow
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import landed
    from landed.agents.temporal import run_task_as_child

#: This agent's own task queue; landed's runner polls its own (LANDED_TASK_QUEUE).
AGENT_QUEUE = "shop-agent"


@workflow.defn
class ShopAgent:
    """Decides to add 3 orders of a batch, and lets landed say whether they are there."""

    @workflow.run
    async def run(self, batch: int, runner_task_queue: str) -> landed.Receipt:
        # The decision (a model's, in a real agent) is workflow code here: the same on replay.
        task = landed.TaskSpec.model_validate(
            {
                "task_id": f"shop-agent-{workflow.info().workflow_id}",
                "owner": "shop-agent",
                "outcome": f"3 orders of batch {batch} are in shop-db",
                "act": {"name": "shop.add_orders", "input": {"batch": batch, "count": 3}},
                "proof_plan": [
                    {
                        "action": "add 3 orders",
                        "probe": {
                            "kind": "record",
                            "source": "shop-db",
                            "query": "select count(*) from orders where batch = ?",
                            "params": [batch],
                        },
                        "expect": {"type": "count", "value": 3},
                    }
                ],
            }
        )
        return await run_task_as_child(task, runner_task_queue=runner_task_queue)


async def main() -> None:
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 14
    client = await landed.Client.connect()  # landed's data converter, for TaskSpec and Receipt
    async with Worker(client.temporal, task_queue=AGENT_QUEUE, workflows=[ShopAgent]):
        receipt = await client.temporal.execute_workflow(
            ShopAgent.run,
            args=[batch, client.task_queue],
            id=f"shop-agent-{uuid.uuid4().hex[:8]}",
            task_queue=AGENT_QUEUE,
        )
    print(f"{'DONE' if receipt.done else 'NOT DONE'}: {receipt.why}")


if __name__ == "__main__":  # the workflow sandbox imports this module again: no run there
    landed.run_main(main())
