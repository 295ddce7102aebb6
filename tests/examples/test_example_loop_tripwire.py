"""examples/loop_tripwire runs as its README says: `landed loop create` declares the loop from
feed.json on a real `landed dev`, run.py's two runs land nothing, the tripwire trips and its
repair is verified, and `landed loops` shows the loop healthy with its trip."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.examples import Example, example_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TRIPWIRE = '{"not_done_in_a_row": 2}'


def _healthy(example: Example) -> dict[str, Any]:
    """`landed loops` once the tripwire has taken the repair's verdict in (a signal after the
    repair settled), or its last answer."""
    deadline = time.monotonic() + 30
    while True:
        loops = example.run("landed", "loops", "--json")
        assert loops.returncode == 0, loops.stderr[-3000:]
        (loop,) = json.loads(loops.stdout)
        if loop["state"] == "healthy" or time.monotonic() > deadline:
            return dict(loop)
        time.sleep(0.5)


def test_the_tripwire_trips_and_its_repair_lands(tmp_path: Path) -> None:
    with example_stack("loop_tripwire", tmp_path) as example:
        create = example.run(
            "landed", "loop", "create", "orders-feed", "--every", "1h", "--task", "feed.json",
            "--paused", "--tripwire", TRIPWIRE,
        )  # fmt: skip
        assert create.returncode == 0, create.stderr[-3000:]
        done = example.run("python", "run.py")
        assert (done.returncode, done.stdout) == (0, example.expected()), done.stderr[-3000:]
        loop = _healthy(example)
    assert (loop["loop"], loop["state"], loop["repairs_verified"]) == ("orders-feed", "healthy", 1)
    assert loop["last_trip"]["repair_task_id"] == "repair-orders-feed-1-1"
    with sqlite3.connect(example.folder / "shop" / "orders.db") as db:
        rows = db.execute("select count(*) from orders where batch = 'today'").fetchone()
    assert rows == (3,)  # the repair's backfill, once; the broken runs added nothing
