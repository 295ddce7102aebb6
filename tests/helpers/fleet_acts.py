"""Acts for the fleet's tests: each logs when and on which actor it started, so a test can say
whether anything acted after a pause, and which harness took a released task."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import landed
from helpers.acts import rows

__all__ = ["fleet_acts_started", "fleet_log_table"]


def fleet_log_table(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "create table if not exists fleet_log (task text, identity text, at real, what text)"
        )


def fleet_acts_started(db: Path, what: str = "acted") -> list[tuple[str, str, float]]:
    """(task, actor identity, wall time) of every act that started, in order."""
    with sqlite3.connect(db, timeout=30) as conn:
        return [
            (str(t), str(i), float(a))
            for t, i, a in conn.execute(
                "select task, identity, at from fleet_log where what = ? order by at", [what]
            )
        ]


def _log(db: str, ctx: landed.ActContext, what: str) -> None:
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(
            "insert into fleet_log (task, identity, at, what) values (?, ?, ?, ?)",
            [ctx.task_id, ctx.identity, time.time(), what],
        )


@landed.act("fleet.rows")
def fleet_rows(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """``test.rows``, logged; ``unavailable_on``: actor identities whose harness is down (the act
    raises HarnessUnavailable there, writing nothing); ``unavailable_after_write_on``: there it
    writes, then raises HarnessUnavailable all the same; ``blocked``: the act reports blocked."""
    db = ctx.credential("rows-db").removeprefix("sqlite:///")
    if ctx.identity in spec.get("unavailable_on", []):
        _log(db, ctx, "unavailable")
        raise landed.HarnessUnavailable(f"usage limit reached on {ctx.identity}")
    if ctx.identity in spec.get("unavailable_after_write_on", []):
        _log(db, ctx, "acted")
        rows(spec, ctx)  # the harness wrote, then lost its session and said it wrote nothing
        raise landed.HarnessUnavailable(f"session expired on {ctx.identity}")
    _log(db, ctx, "acted")
    if spec.get("blocked"):
        return landed.ActReport(
            claimed_status="blocked",
            report="Waiting for the vendor to issue the API key.",
            blocked_on=str(spec["blocked"]),
            clear_by="ops@example.com (vendor account owner)",
        )
    return rows(spec, ctx)
