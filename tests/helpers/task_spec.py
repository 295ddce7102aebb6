"""A valid task spec to start from: ``spec(**over)`` with the fields a test changes, and its
one plan step, ``RECORD``."""

from __future__ import annotations

RECORD = {
    "action": "insert 3 rows",
    "probe": {"kind": "record", "source": "orders-db", "query": "select count(*) from t"},
    "expect": {"type": "count", "value": 3},
}


def spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "task_id": "t-1",
        "owner": "agent-a",
        "outcome": "3 rows in t",
        "act": {"name": "sql.execute", "input": {}},
        "proof_plan": [RECORD],
    }
    base.update(over)
    return base
