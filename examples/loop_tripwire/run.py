"""Two runs of the loop orders-feed, then its repair: python run.py (with ./dev.sh running and
the loop created: landed loop create orders-feed --every 1h --task feed.json --paused
--tripwire '{"not_done_in_a_row": 2}').

Each run is the loop's task (feed.json) under its own id, started here instead of by the
Schedule so that nothing waits an hour. Both claim done and land nothing; the second trips the
tripwire, which starts the repair task on its own."""

import asyncio
import json
from pathlib import Path

from temporalio.service import RPCError

import landed

LOOP = "orders-feed"
REPAIR = f"repair-{LOOP}-1-1"  # the tripwire names it: repair-LOOP-TRIP-ATTEMPT


async def settled(client: landed.Client, task_id: str) -> landed.Receipt:
    """The repair's receipt, once the tripwire has started it and it settled."""
    for _ in range(300):
        try:
            return await client.task(task_id).result()
        except RPCError:  # not started yet: no such workflow
            await asyncio.sleep(0.2)
    raise TimeoutError(f"the tripwire started no {task_id} within a minute")


async def main() -> None:
    client = await landed.Client.connect()
    template = json.loads(Path("feed.json").read_text())
    del template["repair"]
    for run in (1, 2):
        task = {**template, "task_id": f"{LOOP}@{run}", "loop": LOOP}
        receipt = await client.run(task)
        print(f"run {run}:", "DONE:" if receipt.done else "NOT DONE:", receipt.why)
    repair = await settled(client, REPAIR)
    print(f"{REPAIR}:", "DONE:" if repair.done else "NOT DONE:", repair.why)


landed.run_main(main())
