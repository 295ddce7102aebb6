"""A worker role's metrics port: Temporal's SDK metrics and landed_worker_up, on one page."""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import pytest
from helpers.exporter import get, samples, total
from helpers.wait import until

from landed.temporal.workers import run_role


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_role_serves_sdk_metrics_and_its_health(
    temporal_dev: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _free_port()
    monkeypatch.setenv("LANDED_ACTOR_METRICS_PORT", str(port))
    # The actor runs in this test's own process: confined, it would confine pytest with it
    # (Landlock binds the calling thread for good). Its confinement has tests of its own.
    monkeypatch.setenv("LANDED_ACTOR_CONFINE", "off")
    monkeypatch.setenv("LANDED_ACTOR_TASK_QUEUE", f"actor-metrics-{uuid.uuid4().hex[:8]}")
    stop = asyncio.Event()
    ready: list[dict[str, Any]] = []
    role = asyncio.create_task(
        run_role("actor", stop=stop, on_ready=ready.append, address=temporal_dev)
    )
    try:
        await until("the actor polls", lambda: bool(ready) or role.done())
        assert not role.done(), role.exception()
        url = f"http://127.0.0.1:{port}/metrics"
        assert ready[0]["metrics"] == url

        async def scraped() -> str:
            status, text = await get(url)
            return text if status == 200 and "temporal_" in text else ""

        text = await until("the SDK's metrics", scraped)
    finally:
        stop.set()
        await asyncio.wait_for(role, timeout=60)
    found = samples(text)
    assert total(found, "landed_worker_up", role="actor") == 1
    assert total(found, "landed_worker_last_poll_timestamp_seconds", role="actor") > 0
    assert any(name.startswith("temporal_") for name, _ in found)
