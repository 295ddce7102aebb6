"""An act that goes looking for the other roles' secrets on one machine, and reports what it
could reach: the adversary of landed.util.confine, as act code."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import landed


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(4096)
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    return f"read {len(data)} bytes"


def _write(path: str) -> str:
    try:
        with open(path, "wb") as handle:
            handle.write(b"forged")
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    return "written"


def _signal(pid: int) -> str:
    try:
        os.kill(pid, 0)  # permission to signal, without sending one
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    return "allowed"


@landed.act("test.snoop")
def snoop(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
    """Try each read (and write) in ``spec``, then do the act's real work (one row in the
    rows db); the report is the JSON of what each try got."""
    tries: dict[str, str] = {}
    for name, path in dict(spec.get("read", {})).items():
        tries[name] = _read(path)
    for name, path in dict(spec.get("write", {})).items():
        tries[name] = _write(path)
    for name, pid in dict(spec.get("signal", {})).items():
        tries[name] = _signal(int(pid))
    db = ctx.credential("rows-db").removeprefix("sqlite:///")
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(
            "insert into rows (batch, seq, key) values (?, 0, ?)",
            [spec["batch"], ctx.idempotency_key],
        )
    return landed.ActReport(claimed_status="done", report=json.dumps(tries, sort_keys=True))
