"""The act the throughput bench runs: one row in a SQLite table, keyed by the task."""

from __future__ import annotations

import sqlite3
from typing import Any

import landed

__all__ = ["mark"]


@landed.act("bench.mark")
def mark(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    path = ctx.credential("bench-db").removeprefix("sqlite:///")
    with sqlite3.connect(path, timeout=60) as conn:
        conn.execute("insert into marks (task) values (?)", [ctx.task_id])
    return landed.ActReport(claimed_status="done", report="Marked the task.", exit_code=0)
