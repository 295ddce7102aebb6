"""Harness failures (GOV-10): an act that could not run because its harness was unavailable.

An act raises ``HarnessUnavailable`` when the model harness it runs on cannot work right now
(expired auth, a usage limit, a provider outage). That is not the task failing: the task is
released and dispatched again, after a backoff, to another actor task queue of its pool. A
harness that fails ``COOL_AFTER`` times in a row is taken out of the pool for ``COOL_DOWN``.
These are the pure decisions; the workflow holds the pool's state and waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from landed.task.gate_messages import HarnessFailure
from landed.task.messages import ActReport

__all__ = [
    "COOL_AFTER",
    "COOL_DOWN",
    "COOL_WINDOW",
    "HARNESS_UNAVAILABLE",
    "HarnessChoice",
    "HarnessHealth",
    "HarnessPool",
    "HarnessRelease",
    "HarnessUnavailable",
    "cooling_at",
    "fleet_failed",
    "pool_queues",
    "release_backoff",
]

#: The Temporal error type an act's HarnessUnavailable travels as.
HARNESS_UNAVAILABLE = "HarnessUnavailable"
#: Failures in a row after which a harness is taken out of the pool.
COOL_AFTER = 3
#: How long a harness taken out of the pool stays out.
COOL_DOWN = timedelta(minutes=5)
#: The fleet counts a harness's failures within this window (it hears of no successes).
COOL_WINDOW = timedelta(minutes=10)
# Harnesses the fleet remembers, dedup keys of failure reports and error characters it keeps:
# all of it lives in the control workflow's memo, which Temporal caps (32 KiB by default).
_FLEET_HARNESSES = 40
_FLEET_SEEN = 100
_FLEET_ERROR = 120
_FIRST_BACKOFF = timedelta(seconds=2)
_LONGEST_BACKOFF = timedelta(seconds=60)


class HarnessUnavailable(Exception):
    """Raise from an act when its harness cannot work now and nothing was written: expired
    auth, a usage limit, a provider outage. The task is released and dispatched to another
    harness of its pool; it is never settled done or failed for this."""


class HarnessRelease(BaseModel):
    """One release, as the receipt records it (``landed.harness.releases``)."""

    queue: str
    actor: str | None = None
    error: str
    at: datetime


def pool_queues(first: str, more: list[str]) -> list[str]:
    """The task's harness pool: the runner's actor queue first, then the others, once each."""
    return list(dict.fromkeys([first, *more]))


def release_backoff(releases: int) -> timedelta:
    """The wait before dispatching again after the ``releases``-th release (1-based)."""
    wait: timedelta = _FIRST_BACKOFF * float(2 ** min(max(releases - 1, 0), 10))
    return min(wait, _LONGEST_BACKOFF)


@dataclass(frozen=True)
class HarnessChoice:
    """Where the next dispatch goes; ``queue`` None: no harness of the pool is healthy."""

    queue: str | None
    cooling: dict[str, datetime] = field(default_factory=dict)


@dataclass
class HarnessPool:
    """A task's view of its pool: failures in a row and cool-downs per queue (workflow state)."""

    queues: list[str]
    in_a_row: dict[str, int] = field(default_factory=dict)
    cool_until: dict[str, datetime] = field(default_factory=dict)
    releases: list[HarnessRelease] = field(default_factory=list)
    last: str | None = None

    def failed(self, release: HarnessRelease) -> None:
        """Record a release; the queue's N-th failure in a row takes it out for the cool-down."""
        self.releases.append(release)
        count = self.in_a_row.get(release.queue, 0) + 1
        self.in_a_row[release.queue] = count
        if count >= COOL_AFTER:
            self.cool_until[release.queue] = release.at + COOL_DOWN
            self.in_a_row[release.queue] = 0

    def heard(self, cooling: dict[str, datetime]) -> None:
        """The fleet's cool-downs (other tasks' failures too) for this pool's queues."""
        for q, until in cooling.items():
            if q in self.queues and (q not in self.cool_until or until > self.cool_until[q]):
                self.cool_until[q] = until

    def worked(self, queue: str) -> None:
        """The harness answered (whatever the act reported): its failures in a row end."""
        self.in_a_row[queue] = 0

    def choose(self, now: datetime) -> HarnessChoice:
        """The next healthy queue after the last one tried (rotation), else none."""
        healthy = [q for q in self.queues if self.cool_until.get(q, now) <= now]
        cooling = {q: t for q, t in self.cool_until.items() if t > now}
        if not healthy:
            return HarnessChoice(None, cooling)
        if self.last in self.queues:
            start = self.queues.index(self.last) + 1
            order = self.queues[start:] + self.queues[:start]
            nxt = next(q for q in order if q in healthy)
        else:
            nxt = healthy[0]
        self.last = nxt
        return HarnessChoice(nxt, cooling)

    def record(self) -> dict[str, object]:
        """What the receipt keeps (``landed.harness``)."""
        return {
            "pool": list(self.queues),
            "releases": [r.model_dump(mode="json") for r in self.releases],
            "acted_on": self.last,
            "cooled": sorted(self.cool_until),
        }

    def none_healthy(self, cooling: dict[str, datetime], why: str) -> ActReport:
        """The report of a task no harness of its pool can take now: blocked (DOD-9)."""
        last = {r.queue: r.error for r in self.releases}
        parts = [
            f"{q} (out until {cooling[q].isoformat()}; last: {last.get(q, 'n/a')})"
            if q in cooling
            else f"{q} (last: {last.get(q, 'n/a')})"
            for q in self.queues
        ]
        condition = f"no healthy harness in the task's pool ({why}): " + "; ".join(parts)
        return ActReport(
            claimed_status="blocked",
            report=f"Not acted: {condition}. Nothing was written (each harness refused before "
            "acting).",
            blocked_on=condition,
            clear_by="the operator of the harness pool: renew the harness's auth or raise its "
            "limit (or add an actor queue to LANDED_RUNNER_ACTOR_POOL), then submit the task again",
        )


# --- fleet-wide cool-down: one harness's failures counted across every task ------------------


class HarnessHealth(BaseModel):
    """The fleet's view of every harness: recent failures and cool-downs (the control
    workflow's memo, read by each runner's gate before a dispatch)."""

    recent: dict[str, list[datetime]] = Field(default_factory=dict)
    cool_until: dict[str, datetime] = Field(default_factory=dict)
    last_error: dict[str, str] = Field(default_factory=dict)
    seen: list[str] = Field(default_factory=list)


def fleet_failed(health: HarnessHealth, failure: HarnessFailure) -> HarnessHealth:
    """The fleet's view after ``failure``: its ``COOL_AFTER``-th failure within
    ``COOL_WINDOW`` takes the harness out of every task's pool for ``COOL_DOWN``."""
    if failure.key in health.seen:
        return health
    q, at = failure.queue, failure.at
    recent = {k: list(v) for k, v in health.recent.items()}
    cool = dict(health.cool_until)
    times = [t for t in recent.get(q, []) if at - COOL_WINDOW < t <= at] + [at]
    if cool.get(q) is not None and cool[q] > at:
        times = []  # already out: a report from a task that had not heard yet
    elif len(times) >= COOL_AFTER:
        cool[q], times = at + COOL_DOWN, []
    recent[q] = times
    errors = {**health.last_error, q: failure.error[:_FLEET_ERROR]}
    # Bounded: forget the harnesses whose last news is oldest.
    keep = sorted(
        set(recent) | set(cool),
        key=lambda k: max([*recent.get(k, []), *([cool[k]] if k in cool else [])], default=at),
    )[-_FLEET_HARNESSES:]
    return HarnessHealth(
        recent={k: v for k, v in recent.items() if k in keep and v},
        cool_until={k: v for k, v in cool.items() if k in keep},
        last_error={k: v for k, v in errors.items() if k in keep},
        seen=[*health.seen, failure.key][-_FLEET_SEEN:],
    )


def cooling_at(health: HarnessHealth | None, now: datetime) -> dict[str, datetime]:
    """The harnesses out of the pool at ``now`` and until when."""
    if health is None:
        return {}
    return {q: t for q, t in health.cool_until.items() if t > now}
