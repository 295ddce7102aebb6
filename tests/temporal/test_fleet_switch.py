"""The fleet's kill switch on a real Temporal dev server (GOV-4): a pause stops every new act
within 5 seconds, a paused fleet waits (never failed), a resume lets every task act and settle;
a pause made while no runner is up holds once one comes back; status says who and when."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from helpers.fleet_acts import fleet_acts_started, fleet_log_table
from helpers.fleet_roles import extra_runner
from helpers.roles import Roles, run_roles
from helpers.sor import make_rows_db, rows_task
from temporalio.worker import Replayer

from landed.governance.fleet_read import read_switch
from landed.temporal.fleet import flip
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask
from landed.workflows.fleet import Fleet

ACTS = ("helpers.acts", "helpers.fleet_acts")


def _task(task_id: str, db: Path, batch: str) -> dict[str, Any]:
    spec = rows_task(task_id, db, expect=2, batch=batch, write=2)
    spec["act"]["name"] = "fleet.rows"
    return spec


def _roles(address: str, tmp_path: Path, db: Path, fleet: str) -> Any:
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=ACTS,
        runner={"fleet_id": fleet},
    )


async def _status(address: str, fleet: str, queue: str) -> dict[str, Any]:
    """``landed status --json`` as an operator runs it (its own process)."""
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "landed"),
        "status",
        "--json",
        "--address",
        address,
        "--fleet",
        fleet,
        "--task-queue",
        queue,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out
    shown: dict[str, Any] = json.loads(out)
    return shown


async def _replay(roles: Roles, ids: list[str], fleet: str) -> None:
    replayer = Replayer(workflows=[AgentTask, Fleet], plugins=[landed_plugin()])
    for wid in [*ids, fleet]:
        history = await roles.temporal.get_workflow_handle(wid).fetch_history()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (wid, result.replay_failure)


async def test_a_pause_during_a_burst_stops_new_acts_and_a_resume_settles_all(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    fleet_log_table(db)
    tag = uuid.uuid4().hex[:8]
    fleet = f"fleet-{tag}"
    async with _roles(temporal_dev, tmp_path, db, fleet) as roles:
        before = await asyncio.gather(
            *(roles.client.start(_task(f"burst-{tag}-{i}", db, f"a{i}")) for i in range(5))
        )
        # Mid-burst: the pause returns once a runner has read it back.
        asked = time.time()
        paused = await flip(
            roles.temporal,
            paused=True,
            by="ops-anna",
            reason="bad deploy of the pricing agent",
            fleet_id=fleet,
            runner_queue=roles.queues["runner"],
        )
        assert paused.confirmed, paused.note
        returned = time.time()
        after = await asyncio.gather(
            *(roles.client.start(_task(f"burst-{tag}-{j}", db, f"a{j}")) for j in range(5, 10))
        )
        await asyncio.sleep(7)
        started = fleet_acts_started(db)
        late = [s for s in started if s[2] > returned + 5]
        assert late == [], f"acts started more than 5 s after the pause returned: {late}"
        # Stronger than the rule: nothing submitted after the pause has acted.
        acted = {task for task, _, _ in started}
        assert not acted & {h.task_id for h in after}
        last_act = max((s[2] for s in started), default=asked)
        # The switch says who paused, when and why.
        read = await read_switch(roles.temporal, fleet)
        assert read.switch is not None and read.switch.paused
        assert read.switch.by == "ops-anna" and read.switch.reason.startswith("bad deploy")
        assert read.switch.at == paused.flip.at
        resumed = await flip(
            roles.temporal,
            paused=False,
            by="ops-ben",
            fleet_id=fleet,
            runner_queue=roles.queues["runner"],
        )
        assert resumed.confirmed
        back = time.time()
        receipts = await asyncio.gather(*(h.result() for h in [*before, *after]))
        assert [r.verdict for r in receipts] == ["verified"] * 10
        first_after = min(s[2] for s in fleet_acts_started(db) if s[2] > back)
        print(
            f"\nGOV-4 pause: returned {returned - asked:.3f} s after asked; last act started "
            f"{last_act - returned:+.3f} s from its return; resume -> first act "
            f"{first_after - back:.3f} s",
            file=sys.stderr,
        )
        await _replay(roles, [h.task_id for h in [*before[:2], *after[:2]]], fleet)


async def test_a_pause_made_while_the_runner_is_down_holds_when_it_returns(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    fleet_log_table(db)
    tag = uuid.uuid4().hex[:8]
    fleet = f"fleet-{tag}"
    async with _roles(temporal_dev, tmp_path, db, fleet) as roles:
        # Tasks go to a queue only the runner below serves: stopping it is the runner down.
        queue = f"runner2-{tag}"
        client = type(roles.client)(roles.temporal, task_queue=queue)
        async with extra_runner(temporal_dev, roles, queue, fleet_id=fleet):
            first = await client.start(_task(f"down-{tag}-0", db, "d0"))
            assert (await first.result()).verdict == "verified"
        # The runner is down: the pause is recorded by Temporal, no runner can confirm it.
        paused = await flip(
            roles.temporal,
            paused=True,
            by="ops-carl",
            reason="provider incident",
            fleet_id=fleet,
            runner_queue=queue,
            confirm_within=1.0,
        )
        assert not paused.confirmed and "no runner read it back" in paused.note
        waiting = [await client.start(_task(f"down-{tag}-{i}", db, f"d{i}")) for i in (1, 2)]
        async with extra_runner(temporal_dev, roles, queue, fleet_id=fleet):
            await asyncio.sleep(6)
            acted = {task for task, _, _ in fleet_acts_started(db)}
            assert acted == {first.task_id}, "a task acted although the fleet was paused"
            read = await read_switch(roles.temporal, fleet)
            assert read.switch is not None and read.switch.paused
            assert read.switch.by == "ops-carl"
            # `landed status` says the same, who and when included.
            shown = await _status(temporal_dev, fleet, queue)
            assert shown["switch"]["paused"] is True and shown["switch"]["by"] == "ops-carl"
            assert shown["switch"]["reason"] == "provider incident" and shown["switch"]["at"]
            assert (
                await flip(
                    roles.temporal, paused=False, by="ops-carl", fleet_id=fleet, runner_queue=queue
                )
            ).confirmed
            receipts = [await h.result() for h in waiting]
            assert [r.verdict for r in receipts] == ["verified", "verified"]
