"""The task that reads the act back, run on landed dev: python run.py"""

import landed

task = landed.TaskSpec(
    task_id="first-task-1",
    owner="my-agent",
    outcome="3 orders of batch 7 are in the orders table",
    act=landed.ActSpec(name="shop.add_orders", input={"batch": 7, "count": 3}),
    proof_plan=[
        landed.Contract(
            action="add 3 orders",
            probe=landed.RecordProbe(
                source="shop-db", query="select count(*) from orders where batch = ?", params=[7]
            ),
            expect=landed.Count(value=3),
        )
    ],
)


async def main() -> None:
    client = await landed.Client.connect()
    receipt = await client.run(task)
    print("DONE:" if receipt.done else "NOT DONE:", receipt.why)
    print("verdict:", receipt.verdict)


landed.run_main(main())  # asyncio.run, then a clean exit past the SDK's threads
