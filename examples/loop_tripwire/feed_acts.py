"""The acts: the loop's import, which copies what the upstream feed holds (nothing: the feed
broke) and claims done anyway, and the repair, which backfills the orders from the supplier."""

from typing import Any

import landed


@landed.act("feed.import")
def import_feed(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    with ctx.credentials.sql("shop-db") as conn:
        conn.execute("insert into orders select ?, line from upstream", [input["batch"]])
    return landed.ActReport(claimed_status="done", report="feed imported")


@landed.act("feed.backfill")
def backfill(input: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    rows = [(input["batch"], line) for line in range(input["count"])]
    with ctx.credentials.sql("shop-db") as conn:
        conn.executemany("insert into orders values (?, ?)", rows)
    return landed.ActReport(claimed_status="done", report=f"backfilled {len(rows)} orders")
