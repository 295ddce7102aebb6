"""Readiness fails closed: not polling, a check that raises, hangs or reports, all named."""

from __future__ import annotations

import asyncio

import pytest

from landed.telemetry import health
from landed.telemetry.health import Readiness


async def _ok() -> str | None:
    return None


async def test_ready_only_once_polling_and_every_check_passes() -> None:
    ready = Readiness(ready_within_s=60)
    ready.temporal(_ok)
    assert await ready.problems() == ["worker: not polling yet"]
    ready.polling = True
    assert await ready.problems() == []


async def test_failed_checks_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "CHECK_TIMEOUT_S", 0.01)

    async def hangs() -> str | None:
        await asyncio.sleep(10)
        return None

    async def raises() -> str | None:
        raise ConnectionRefusedError("refused")

    async def says() -> str | None:
        return "not loaded"

    ready = Readiness(ready_within_s=0)
    ready.polling = True
    ready.temporal(raises)
    ready.add("ledger", hangs)
    ready.add("signing_key", says)
    assert await ready.problems() == [
        "temporal: ConnectionRefusedError: refused",
        "ledger: no answer in 0.01 s",
        "signing_key: not loaded",
    ]
