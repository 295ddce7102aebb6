"""The role check answers whatever the roles' task work: an actor whose every activity slot is
taken by a running act still answers at once (on its role check queue), so a new task start is
not refused as if the actor were down."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers.roles import run_roles
from helpers.sor import act_runs, make_rows_db, rows_task
from helpers.wait import until

from landed.task.spec import TaskSpec
from landed.temporal.role_check import RoleCheck

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

_SLOTS = 2
#: Far below the client's 30 s: the answer must not wait for an act to end.
_WAIT_S = 8.0


async def test_an_actor_with_every_slot_held_still_answers_and_a_start_is_not_refused(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    release = tmp_path / "release"
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        actor={"max_concurrent_activities": _SLOTS},
    ) as roles:
        held = [f"busy-held-{i}" for i in range(_SLOTS)]
        for task_id in held:
            task = rows_task(task_id, db, expect=1, batch=task_id, write=1)
            task["act"]["input"]["wait_for_file"] = str(release)
            await roles.client.start(task)
        try:
            # Every actor slot runs an act that waits for the release file.
            await until("every slot held", lambda: all(act_runs(db, t) for t in held), timeout=30)
            fresh = rows_task("busy-new", db, expect=1, batch="busy-new", write=1)
            check = RoleCheck(roles.temporal, roles.queues["runner"], wait_s=_WAIT_S)
            began = time.monotonic()
            await check.check(TaskSpec.model_validate(fresh))  # TaskRefused before the fix
            assert time.monotonic() - began < _WAIT_S / 2
            await roles.client.start(fresh)  # asks again: not refused either
        finally:
            release.touch()
        receipts = [await roles.client.task(t).result() for t in [*held, "busy-new"]]
        assert [r.verdict for r in receipts] == ["verified"] * (_SLOTS + 1), receipts
