"""Built-in acts: an HTTP request, a SQL statement and a command, each with the idempotency key."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from typing import Any
from urllib.parse import urljoin, urlparse

import httpx

from landed._acts import ActContext, act
from landed._task import ActReport

__all__ = ["command", "http_request", "sql_execute"]

_TAIL = 2000


def _base(ctx: ActContext, spec: dict[str, Any]) -> str:
    if "credential" in spec:
        base = ctx.credential(str(spec["credential"]))
        return urljoin(base.rstrip("/") + "/", str(spec.get("path", "")).lstrip("/"))
    if "url" in spec:
        return str(spec["url"])
    raise ValueError("http.request needs 'credential' (+ 'path') or 'url' in its input")


@act("http.request")
async def http_request(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Send one HTTP request carrying ``Idempotency-Key``; 2xx (or ``ok_status``) claims done."""
    url = _base(ctx, spec)
    method = str(spec.get("method", "POST")).upper()
    headers = {str(k): str(v) for k, v in dict(spec.get("headers", {})).items()}
    headers.setdefault("Idempotency-Key", ctx.idempotency_key)
    ok = set(spec.get("ok_status", [])) or set(range(200, 300))
    async with httpx.AsyncClient(timeout=float(spec.get("timeout_s", 30))) as client:
        resp = await client.request(
            method, url, headers=headers, json=spec.get("json"), content=spec.get("body")
        )
    claimed = "done" if resp.status_code in ok else "failed"
    return ActReport(
        claimed_status=claimed,
        report=f"{method} {url} -> HTTP {resp.status_code}: {resp.text[:_TAIL]}",
    )


def _run_sql(dsn: str, statement: str, params: Any) -> int:
    parsed = urlparse(dsn)
    if parsed.scheme == "sqlite":
        # sqlite:///relative.db or sqlite:////absolute/path.db, as SQLAlchemy writes them.
        path = dsn.removeprefix("sqlite:///")
        with sqlite3.connect(path, timeout=30) as conn:
            cur = conn.execute(statement, params)
            return cur.rowcount
    if parsed.scheme in ("postgres", "postgresql"):
        import psycopg

        with psycopg.connect(dsn) as pg:
            return pg.execute(statement, params or None).rowcount
    raise ValueError(f"sql.execute supports sqlite:/// and postgresql:// DSNs, not {dsn[:20]!r}")


@act("sql.execute")
async def sql_execute(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Run one SQL statement on an actor credential (a DSN); reports the driver's row count,
    which is the act's own return value and therefore never proof."""
    dsn = ctx.credential(str(spec["credential"]))
    params = spec.get("params", [])
    if isinstance(params, dict):
        params = {**params, "idempotency_key": ctx.idempotency_key}
    rows = await asyncio.to_thread(_run_sql, dsn, str(spec["statement"]), params)
    return ActReport(claimed_status="done", report=f"statement ran; driver row count {rows}")


@act("command")
async def command(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Run argv (no shell) with LANDED_IDEMPOTENCY_KEY set; exit 0 claims done (DOD-3: a claim)."""
    argv = [str(a) for a in spec["argv"]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict(spec.get("env", {}))}
    env["LANDED_IDEMPOTENCY_KEY"] = ctx.idempotency_key
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=spec.get("cwd"),
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), float(spec.get("timeout_s", 300)))
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    code = proc.returncode if proc.returncode is not None else -1
    return ActReport(
        claimed_status="done" if code == 0 else "failed",
        report=out.decode(errors="replace")[-_TAIL:],
        exit_code=code,
    )
