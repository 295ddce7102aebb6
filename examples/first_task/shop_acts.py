"""The act: the agent's side. It writes the orders; it does not get to say they landed."""

import sqlite3
from typing import Any

import landed


@landed.act("shop.add_orders")
def add_orders(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    db = ctx.credential("shop-db").removeprefix("sqlite:///")
    rows = [(input["batch"], line) for line in range(input["count"])]
    with sqlite3.connect(db) as conn:
        conn.executemany("insert into orders (batch, line) values (?, ?)", rows)
    return landed.ActReport(claimed_status="done", report=f"added {len(rows)} orders")
