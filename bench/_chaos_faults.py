"""The chaos bench's faults: when each role is SIGKILLed and when the server restarts."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

#: How often each role is killed in one run, and how often the server restarts.
KILLS = {"actor": 20, "verifier": 10, "runner": 5}
SERVER_RESTARTS = 1


@dataclass(frozen=True, order=True)
class Fault:
    at_s: float  # seconds after the run's first task started
    target: str  # a role, or "server"

    def describe(self) -> str:
        verb = "restart" if self.target == "server" else "kill"
        return f"{verb} {self.target} at {self.at_s:.1f}s"


def schedule(rng: random.Random, *, duration_s: float) -> list[Fault]:
    """Seeded moments spread over the part of the run where tasks are in flight (the no-fault
    run's length: a run with faults lasts longer, so every fault lands while it runs)."""
    targets = [role for role, n in KILLS.items() for _ in range(n)]
    targets += ["server"] * SERVER_RESTARTS
    return sorted(
        Fault(round(rng.uniform(0.05, 0.85) * duration_s, 2), target) for target in targets
    )


async def inject(stack: Any, faults: list[Fault], started: float, applied: list[Fault]) -> None:
    """Apply each fault at its moment: SIGKILL a role and start it again (it must report ready
    before the next fault), or stop the server and start it on the same database file. Each
    fault, at the moment it really happened, goes into ``applied``."""
    for fault in faults:
        await asyncio.sleep(max(0.0, fault.at_s - (time.monotonic() - started)))
        applied.append(Fault(round(time.monotonic() - started, 2), fault.target))
        if fault.target == "server":
            await asyncio.to_thread(stack.server.restart)
            continue
        await asyncio.to_thread(stack.roles[fault.target].kill)
        await asyncio.to_thread(stack.start_role, fault.target)
        await stack.roles[fault.target].wait_ready(120)
