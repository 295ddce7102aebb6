"""Acts the tests register on the actor (imported by module path, as users' acts are)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx

import landed


def _db(ctx: landed.ActContext) -> str:
    return ctx.credential("rows-db").removeprefix("sqlite:///")


def _later(delay: float, db: str, statement: str, values: list[tuple[Any, ...]]) -> None:
    """Run ``statement`` over ``values`` on ``db`` ``delay`` seconds from now, in a thread."""

    def run() -> None:
        time.sleep(delay)
        with sqlite3.connect(db, timeout=30) as conn:
            conn.executemany(statement, values)

    threading.Thread(target=run, daemon=True).start()


@landed.act("test.rows")
def rows(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """Write ``write`` rows to batch, claim ``claim`` with ``report``; optional sleeps and a
    failure before or after writing (the first ``fail_attempts`` attempts); ``delete_batch``
    also deletes that batch's rows (a write beside the one claimed)."""
    db = _db(ctx)
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(
            "insert into act_log (task, attempt, key) values (?, ?, ?)",
            [ctx.task_id, ctx.attempt, ctx.idempotency_key],
        )
    # Sleeps happen on the first attempt only: a re-run after a crash goes straight through.
    first = ctx.attempt == 1
    time.sleep(float(spec.get("sleep_before_s", 0)) if first else 0)
    failing = ctx.attempt <= int(spec.get("fail_attempts", 0))
    if failing and spec.get("fail") == "before":
        raise RuntimeError("connection reset before the write")
    if spec.get("wait_for_file"):
        while not Path(spec["wait_for_file"]).exists():
            time.sleep(0.05)
    values = [(spec["batch"], i, ctx.idempotency_key) for i in range(int(spec.get("write", 0)))]
    if spec.get("land_after_s") is not None:
        # The write becomes visible later than the act returns (replica lag, a queue).
        _later(
            float(spec["land_after_s"]),
            db,
            "insert into rows (batch, seq, key) values (?, ?, ?)",
            values,
        )
    else:
        with sqlite3.connect(db, timeout=30) as conn:
            conn.executemany("insert into rows (batch, seq, key) values (?, ?, ?)", values)
            if spec.get("delete_batch"):
                conn.execute("delete from rows where batch = ?", [spec["delete_batch"]])
    if spec.get("undo_after_s") is not None:
        # A process of the act's own takes the write back just after the act returns.
        _later(
            float(spec["undo_after_s"]), db, "delete from rows where batch = ?", [(spec["batch"],)]
        )
    time.sleep(float(spec.get("sleep_after_s", 0)) if first else 0)
    if failing and spec.get("fail") == "after":
        raise RuntimeError("the write returned an error")
    return landed.ActReport(
        claimed_status=str(spec.get("claim", "done")),
        report=str(spec.get("report", "Inserted the rows.")),
        exit_code=0,
        cost=landed.Cost(input_tokens=100, output_tokens=20, usd=0.01),
        artifacts=list(spec.get("artifacts", [])),  # cited by the agent itself
    )


@landed.act("test.rows_bad_report")
def rows_bad_report(spec: dict[str, Any], ctx: landed.ActContext) -> Any:
    """Writes ``write`` rows, then returns a dict where an ActReport belongs: the act ran, and
    its report cannot be read."""
    rows({**spec, "write": spec.get("write", 3)}, ctx)
    return {"claimed_status": "done", "report": "Inserted."}


@landed.act("test.publish")
async def publish(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """POST a post to the site; an HTTP error raises (the write's outcome is then unknown)."""
    async with httpx.AsyncClient(timeout=10) as client:
        resp = await client.post(
            ctx.credential("site") + "/posts",
            json={"slug": spec["slug"], "title": spec.get("title", "")},
            headers={"Idempotency-Key": ctx.idempotency_key},
        )
    if resp.status_code >= 400:
        raise RuntimeError(f"publish failed: HTTP {resp.status_code}")
    await asyncio.sleep(0)
    # ``echo_credential``: an agent that quotes where it published, credential and all.
    where = f" to {ctx.credential('site')}" if spec.get("echo_credential") else ""
    return landed.ActReport(claimed_status="done", report=f"Published {spec['slug']}{where}.")
