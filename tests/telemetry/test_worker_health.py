"""A role's /healthz and /readyz on real parts: its own Temporal dev server, PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from helpers.exporter import get
from helpers.ports import steady_port
from helpers.tcpproxy import TcpProxy
from helpers.wait import until

from landed.dev.server import DevServer, free_port
from landed.signing import KeyPair
from landed.temporal.workers import run_role

pytestmark = pytest.mark.slow


async def _status(url: str) -> int:
    try:
        status, _ = await get(url)
    except OSError:
        return 0
    return status


async def test_runner_readiness_follows_temporal_and_the_ledger(
    postgres_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server of its own: this test stops it, which the shared session server must never be.
    # Both are stopped and started again on their ports: ports a reconnecting client cannot take.
    # Its log names the reason should it fail to start again.
    server = DevServer(headless=True, port=steady_port(), log_file=tmp_path / "temporal.log")
    await asyncio.to_thread(server.start)
    pg = urlsplit(postgres_dsn)
    proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432)
    proxy.port = steady_port()
    await proxy.start()
    schema = f"landed_readyz_{uuid.uuid4().hex[:8]}"
    _, pub = KeyPair.generate().save(tmp_path / "verifier")
    port = free_port()
    for name, value in {
        "METRICS_PORT": str(port),
        "READY_WITHIN_S": "0.2",
        "TRUST": str(pub),
        "TASK_QUEUE": f"runner-health-{uuid.uuid4().hex[:8]}",
        "LEDGER_URL": f"postgresql://{pg.username}@127.0.0.1:{proxy.port}{pg.path}?schema={schema}",
    }.items():
        monkeypatch.setenv(f"LANDED_RUNNER_{name}", value)
    stop = asyncio.Event()
    ready: list[dict[str, Any]] = []
    role = asyncio.create_task(
        run_role("runner", stop=stop, on_ready=ready.append, address=server.address)
    )
    base = f"http://127.0.0.1:{port}"

    async def readyz(want: int) -> bool:
        return await _status(f"{base}/readyz") == want

    try:
        await until("the runner polls", lambda: bool(ready) or role.done())
        assert not role.done(), role.exception()
        assert await _status(f"{base}/healthz") == 200
        await until("ready", lambda: readyz(200))

        await proxy.cut()
        await until("not ready while the ledger is unreachable", lambda: readyz(503))
        assert await _status(f"{base}/healthz") == 200  # alive all the same: no restart
        await proxy.restore()
        await until("ready again with the ledger back", lambda: readyz(200), timeout=60)

        await asyncio.to_thread(server.stop)
        _, text = await until(
            "not ready while Temporal is down",
            lambda: _answer(f"{base}/readyz", 503),
        )
        assert "temporal:" in text, text
        await asyncio.to_thread(server.start)  # the same port again
        await until("ready again with Temporal back", lambda: readyz(200), timeout=60)
    finally:
        stop.set()
        await asyncio.wait_for(role, timeout=60)
        await proxy.cut()
        await asyncio.to_thread(server.stop)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(f"drop schema if exists {schema} cascade")


async def _answer(url: str, want: int) -> tuple[int, str] | None:
    status, text = await get(url)
    return (status, text) if status == want else None
