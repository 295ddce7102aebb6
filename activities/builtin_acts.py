"""Built-in acts: an HTTP request, a SQL statement and a command, each with the idempotency key."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
from typing import Any
from urllib.parse import parse_qsl, unquote, urljoin, urlparse, urlsplit, urlunsplit

import httpx

from landed.task.acts import ActContext, act
from landed.task.messages import ActReport
from landed.util.orphans import stop_with_parent

from ._threads import to_the_end

__all__ = ["command", "http_request", "sql_execute"]

_TAIL = 2000
_HIDDEN = "[redacted]"


def _safe_url(url: str) -> str:
    """``url`` fit for a report: no user:password@, and no query values (tokens ride there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(an unparseable URL)"
    query = "&".join(f"{k}={_HIDDEN}" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def _secrets_of(url: str) -> list[str]:
    """The credential-bearing pieces of a URL or DSN, to scrub from any text about it."""
    found = [url]
    try:
        parts = urlsplit(url)
        found.extend(p for p in (parts.password, parts.username) if p)
        found.extend(v for _, v in parse_qsl(parts.query) if v)
    except ValueError:
        pass
    found.extend(unquote(s) for s in list(found))
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, _HIDDEN)
    return text


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
    # The URL may carry the actor's credential (user:token@, ?key=...): reports and errors name
    # it without them, since both end up in the receipt and the ledger.
    secrets = [*_secrets_of(url), *(v for v in headers.values() if len(v) >= 4)]
    shown = _safe_url(url)
    try:
        async with httpx.AsyncClient(timeout=float(spec.get("timeout_s", 30))) as client:
            resp = await client.request(
                method, url, headers=headers, json=spec.get("json"), content=spec.get("body")
            )
    except httpx.HTTPError as exc:
        detail = _scrub(str(exc) or type(exc).__name__, secrets)
        raise RuntimeError(f"{method} {shown} failed: {type(exc).__name__}: {detail}") from None
    claimed = "done" if resp.status_code in ok else "failed"
    # Scrubbed whole, then cut: a secret the cut halved would no longer match.
    body = _scrub(resp.text, secrets)[:_TAIL]
    return ActReport(
        claimed_status=claimed,
        report=f"{method} {shown} -> HTTP {resp.status_code}: {body}",
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
    # Never any of the DSN's text: it holds the password.
    scheme = parsed.scheme or "(none)"
    raise ValueError(
        f"sql.execute supports sqlite:/// and postgresql:// DSNs, not scheme {scheme!r}"
    )


@act("sql.execute")
async def sql_execute(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Run one SQL statement on an actor credential (a DSN); reports the driver's row count,
    which is the act's own return value and therefore never proof."""
    dsn = ctx.credential(str(spec["credential"]))
    params = spec.get("params", [])
    if isinstance(params, dict):
        params = {**params, "idempotency_key": ctx.idempotency_key}
    try:
        rows = await to_the_end(_run_sql, dsn, str(spec["statement"]), params)
    except Exception as exc:
        # A driver's message can quote the DSN; the error reaches the receipt.
        detail = _scrub(str(exc), _secrets_of(dsn))
        raise RuntimeError(f"sql.execute failed: {type(exc).__name__}: {detail}") from None
    return ActReport(claimed_status="done", report=f"statement ran; driver row count {rows}")


@act("command")
async def command(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Run argv (no shell) with LANDED_IDEMPOTENCY_KEY set; exit 0 claims done (DOD-3: a claim).
    Whatever it leaves running in the background is stopped when it exits."""
    argv = [str(a) for a in spec["argv"]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict(spec.get("env", {}))}
    env["LANDED_IDEMPOTENCY_KEY"] = ctx.idempotency_key
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=spec.get("cwd"),
        start_new_session=True,
        # An actor killed outright (SIGKILL, OOM) cannot stop the command: the kernel does,
        # so it cannot write after the workflow reads back and perhaps runs the act again.
        # Only the command itself: what it starts in the background is not stopped then.
        preexec_fn=stop_with_parent(signal.SIGKILL),
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), float(spec.get("timeout_s", 300)))
    except BaseException:
        # Timed out or cancelled: stop the command and whatever it started before reporting,
        # so nothing it runs can still write after the workflow reads back.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        while proc.returncode is None:
            try:
                await asyncio.shield(proc.wait())
            except asyncio.CancelledError:
                continue  # asked again: still report only once the group is gone
        raise
    # The command has exited; what it left running in the background could still write after
    # the act reports and the workflow reads back, so it goes with the act.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    code = proc.returncode if proc.returncode is not None else -1
    text = out.decode(errors="replace")
    # "..." marks a cut start, where the actor's redaction looks for the end of a secret.
    tail = text if len(text) <= _TAIL else "..." + text[-_TAIL:]
    return ActReport(claimed_status="done" if code == 0 else "failed", report=tail, exit_code=code)
