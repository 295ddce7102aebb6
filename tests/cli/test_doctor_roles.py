"""``landed doctor``'s role checks against a real Temporal dev server with the roles running in
process: every role polls and the actor's acts are named; a role whose queue no worker polls is
named with the `landed worker ROLE` to start; an actor the runner cannot reach is named too.
The Temporal clock read from the preflight's start time is this machine's (same host)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from helpers.roles import Roles, run_roles
from helpers.wait import until

from landed.cli.doctor_check import Check
from landed.cli.doctor_clock import Offset
from landed.cli.doctor_roles import role_checks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TIMEOUT = 10.0  # each answer; generous on a loaded machine


def _settings(monkeypatch: pytest.MonkeyPatch, roles: Roles, **moved: str) -> None:
    """The shell's settings naming the stack's queues, ``moved`` roles elsewhere."""
    for role, queue in roles.queues.items():
        monkeypatch.setenv(f"LANDED_{role.upper()}_TASK_QUEUE", moved.get(role, queue))


async def _checks(roles: Roles, ready: tuple[str, ...]) -> tuple[dict[str, Check], Offset | None]:
    """The role checks, once the ``ready`` roles' pollers are listed (a worker just started
    may not have polled yet)."""

    async def polled() -> tuple[dict[str, Check], Offset | None] | None:
        checks, clock = await role_checks(roles.temporal, TIMEOUT)
        named = {c.name: c for c in checks}
        return (named, clock) if all(named[f"{r} polling"].ok for r in ready) else None

    return await until(f"{', '.join(ready)} polling", polled, timeout=60, every=0.5)


async def test_every_role_polling_and_the_acts_are_named(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with run_roles(temporal_dev, tmp_path) as roles:
        _settings(monkeypatch, roles)
        checks, clock = await _checks(roles, ("actor", "verifier", "runner"))
    assert all(c.ok for c in checks.values()), checks
    assert roles.identities["runner"] in checks["runner polling"].detail
    assert roles.queues["verifier"] in checks["verifier polling"].detail
    assert "test.rows" in checks["acts"].detail and "test.publish" in checks["acts"].detail
    assert clock is not None and clock.skew_s < 2.0, clock


async def test_a_role_no_worker_polls_for_is_named_with_the_command(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    async with run_roles(temporal_dev, tmp_path) as roles:
        _settings(monkeypatch, roles, verifier=nobody)
        checks, _ = await _checks(roles, ("actor", "runner"))
        missing = checks["verifier polling"]
        assert not missing.ok and nobody in missing.detail
        assert "landed worker verifier" in str(missing.fix)
        assert [n for n, c in checks.items() if not c.ok] == ["verifier polling"]

        _settings(monkeypatch, roles, runner=nobody)
        checks, clock = await _checks(roles, ("actor", "verifier"))
    assert not checks["runner polling"].ok and "landed worker runner" in str(
        checks["runner polling"].fix
    )
    assert not checks["acts"].ok and "no runner" in checks["acts"].detail
    assert clock is not None  # the preflight was started (and ended) all the same


async def test_an_actor_the_runner_cannot_reach_is_named(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    async with run_roles(temporal_dev, tmp_path, runner={"actor_task_queue": nobody}) as roles:
        _settings(monkeypatch, roles, actor=nobody)
        checks, _ = await _checks(roles, ("verifier", "runner"))
    assert not checks["actor polling"].ok and "landed worker actor" in str(
        checks["actor polling"].fix
    )
    acts = checks["acts"]
    assert not acts.ok and "the actor did not answer" in acts.detail and nobody in acts.detail
