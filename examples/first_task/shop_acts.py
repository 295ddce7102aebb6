"""The act: the agent's side. It writes the orders; it does not get to say they landed."""

from typing import Any

import landed


@landed.act("shop.add_orders")
def add_orders(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    rows = [(input["batch"], line) for line in range(input["count"])]
    with ctx.credentials.sql("shop-db") as conn:  # a sqlite3 connection: commits on leaving
        conn.executemany("insert into orders (batch, line) values (?, ?)", rows)
    return landed.ActReport(claimed_status="done", report=f"added {len(rows)} orders")
