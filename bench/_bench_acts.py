"""The act the throughput bench runs: one row in a SQLite table, keyed by the task."""

from __future__ import annotations

import sqlite3
from typing import Any

import landed

__all__ = ["chaos_mark", "held_mark", "mark"]


@landed.act("bench.mark")
def mark(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    path = ctx.credential("bench-db").removeprefix("sqlite:///")
    with sqlite3.connect(path, timeout=60) as conn:
        conn.execute("insert into marks (task) values (?)", [ctx.task_id])
    return landed.ActReport(claimed_status="done", report="Marked the task.", exit_code=0)


@landed.act("bench.chaos_mark")
def chaos_mark(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """One mark row, with a pause before and after the write, so that a kill lands in either."""
    import time

    path = ctx.credential("bench-db").removeprefix("sqlite:///")
    time.sleep(float(spec.get("before_s", 0)))
    with sqlite3.connect(path, timeout=60) as conn:
        conn.execute("insert into marks (task) values (?)", [ctx.task_id])
    time.sleep(float(spec.get("after_s", 0)))
    return landed.ActReport(claimed_status="done", report="Marked the task.", exit_code=0)


@landed.act("bench.held_mark")
def held_mark(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """One mark row, written once the bench opens the gate the act names (a row in the gate
    table), so that every task the bench starts is in flight at once (the memory bench).

    Gives up waiting after ``hold_s`` seconds and marks anyway: a bench that died before opening
    its gate must not leave acts holding the actor's slots."""
    import time

    path = ctx.credential("bench-db").removeprefix("sqlite:///")
    until = time.monotonic() + float(spec.get("hold_s", 600))
    with sqlite3.connect(path, timeout=60) as conn:
        opened = "select 1 from gate where name = ?"
        while time.monotonic() < until and not conn.execute(opened, [spec["gate"]]).fetchone():
            time.sleep(0.25)
        conn.execute("insert into marks (task) values (?)", [ctx.task_id])
    return landed.ActReport(claimed_status="done", report="Marked the task.", exit_code=0)
