"""The agent's own work, outside Temporal and landed: python agent.py

It adds 3 orders of batch b-17 and none of b-18, though claims.jsonl (its log) says it did
both. landed reconcile reads each claim back by the operator's contract (contracts.json)."""

import sqlite3

with sqlite3.connect("shop/orders.db") as db:
    db.executemany("insert into orders values ('b-17', ?)", [(line,) for line in range(3)])
