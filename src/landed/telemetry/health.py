"""A worker role's ``/healthz`` and ``/readyz``: what a Kubernetes probe (or a person) asks.

``/healthz`` answers while the process serves. ``/readyz`` answers 200 only while the worker
polls, Temporal answered the role within the last ``ready_within_s`` seconds, and each of the
role's own checks passes (the runner's ledger, the verifier's signing key). Fail closed: a
check that raises or runs past its time is a failed check, named in the answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["CHECK_TIMEOUT_S", "Readiness", "ReadyCheck"]

# A check that takes longer than this fails: the probe itself has a timeout, and a hung ledger
# must read as "not ready", not as a probe that never answers.
CHECK_TIMEOUT_S = 2.0

# None when the part is ready, else what is wrong (shown in /readyz, never a secret).
ReadyCheck = Callable[[], Awaitable[str | None]]


class Readiness:
    """The role's readiness: polling started, Temporal answering, and the role's own checks."""

    def __init__(self, ready_within_s: float = 15.0) -> None:
        self.ready_within_s = ready_within_s
        self.polling = False
        self.last_contact = 0.0  # when Temporal last answered the role (time.monotonic)
        self._temporal: ReadyCheck | None = None
        self._checks: dict[str, ReadyCheck] = {}

    def temporal(self, check: ReadyCheck) -> None:
        """How to ask Temporal whether it answers this role's connection."""
        self._temporal = check

    def add(self, name: str, check: ReadyCheck) -> None:
        self._checks[name] = check

    async def problems(self) -> list[str]:
        """What keeps the role from being ready; empty when it is."""
        if not self.polling:
            return ["worker: not polling yet"]
        found: list[str] = []
        if time.monotonic() - self.last_contact > self.ready_within_s:
            # Not heard from recently: ask now, so one probe both notices and recovers.
            problem = await _run("temporal", self._temporal)
            if problem is None:
                self.last_contact = time.monotonic()
            else:
                found.append(problem)
        for name, check in self._checks.items():
            problem = await _run(name, check)
            if problem is not None:
                found.append(problem)
        return found


async def _run(name: str, check: ReadyCheck | None) -> str | None:
    if check is None:
        return f"{name}: no check configured"
    try:
        problem = await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return f"{name}: no answer in {CHECK_TIMEOUT_S:g} s"
    except Exception as exc:
        # The first line and the type only: a driver's message can quote a DSN.
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return f"{name}: {type(exc).__name__}: {first}"
    return None if problem is None else f"{name}: {problem}"
