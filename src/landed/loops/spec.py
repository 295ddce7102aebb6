"""A loop (GOV-9): recurring agent work declared once: its task template, cadence, tripwire
rules and repair. The ids derived from a loop's name live here, so every caller derives them
the same way (a schedule's catch-up or a second trip never starts a second copy)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from landed.probes.contract import Contract
from landed.task.spec import ActSpec, TaskSpec

__all__ = [
    "MAX_CADENCE",
    "MIN_CADENCE",
    "PERSON_ACT",
    "LoopSpec",
    "RepairSpec",
    "TripwireRules",
    "loop_task",
    "repair_task",
    "repair_task_id",
    "repair_workflow_id",
    "run_task_id",
    "schedule_id",
    "tripwire_id",
]

#: A loop runs at most once a minute and at least once a month: a zero cadence would start
#: tasks back to back, and one of years would leave its tripwire blind for years.
MIN_CADENCE = timedelta(minutes=1)
MAX_CADENCE = timedelta(days=31)
#: The act of a repair that is a task for a person: it reports what the person said
#: (`landed repair done LOOP`), and the read-back decides, as for any task.
PERSON_ACT = "landed.person"
_NAME = r"^[a-z0-9][a-z0-9-]{0,62}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TripwireRules(_Strict):
    """When a loop counts as broken. Defaults: silence past cadence x 2, 3 not-done in a row,
    no proof-rate floor."""

    silence: timedelta | None = Field(
        default=None, description="No verified settlement for this long trips (default 2x)."
    )
    not_done_in_a_row: int = Field(default=3, ge=1, le=1000)
    proof_floor: float | None = Field(default=None, ge=0.0, le=1.0)
    window: int = Field(default=10, ge=1, le=1000, description="K: the proof floor's window.")


class RepairSpec(_Strict):
    """The repair task a trip queues: its own outcome and proof plan, and either an act of its
    own or none (a task for a person, held until `landed repair done LOOP`)."""

    outcome: str = Field(min_length=1)
    owner: str = Field(default="landed-tripwire", min_length=1, max_length=200)
    target: str | None = None
    proof_plan: list[Contract] = Field(default_factory=list)
    act: ActSpec | None = None
    attempts: int = Field(default=3, ge=1, le=20, description="Repairs before holding.")
    backoff: timedelta = Field(default=timedelta(minutes=1), description="Doubles per retry.")

    @field_validator("proof_plan")
    @classmethod
    def _has_plan(cls, value: list[Contract]) -> list[Contract]:
        if not value:
            raise ValueError(
                "a repair whose own proof plan is empty could never show the loop repaired; "
                "give repair.proof_plan at least one read-back step (a probe and its expect)"
            )
        return value

    @field_validator("backoff")
    @classmethod
    def _backoff_bounds(cls, value: timedelta) -> timedelta:
        if not timedelta(seconds=1) <= value <= timedelta(days=1):
            raise ValueError("repair.backoff must be between 1 second and 1 day, e.g. PT1M")
        return value


class LoopSpec(_Strict):
    """One loop: ``task`` is a TaskSpec without its task_id (each run gets its own)."""

    name: str = Field(pattern=_NAME, description="Lowercase letters, digits and dashes.")
    every: timedelta
    task: dict[str, Any]
    tripwire: TripwireRules = Field(default_factory=TripwireRules)
    repair: RepairSpec | None = None

    @field_validator("every")
    @classmethod
    def _cadence(cls, value: timedelta) -> timedelta:
        if not MIN_CADENCE <= value <= MAX_CADENCE:
            raise ValueError(
                f"a loop's cadence (every) of {value} is outside 1 minute to 31 days; give "
                "one such as 15m, 1h or 1d"
            )
        return value

    @model_validator(mode="after")
    def _template(self) -> LoopSpec:
        if "task_id" in self.task:
            raise ValueError(
                "a loop's task template has a task_id; remove it: each run's id is derived "
                "from the loop and its scheduled time"
            )
        loop_task(self, f"{self.name}@check")  # the template must make a valid task
        return self

    @property
    def silence(self) -> timedelta:
        return self.tripwire.silence or self.every * 2


def tripwire_id(loop: str) -> str:
    return f"tripwire-{loop}"


def repair_workflow_id(loop: str) -> str:
    return f"repair-{loop}"


def schedule_id(loop: str) -> str:
    return f"loop-{loop}"


def run_task_id(loop: str, scheduled: datetime) -> str:
    """The task id of the loop's run scheduled at ``scheduled``: a second fire of the same
    time is the same task, which never acts twice."""
    at = scheduled.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{loop}@{at}"


def repair_task_id(loop: str, trip: int, attempt: int) -> str:
    return f"repair-{loop}-{trip}-{attempt}"


def loop_task(spec: LoopSpec, task_id: str) -> TaskSpec:
    """The loop's template as a task of the loop, under ``task_id``."""
    return TaskSpec.model_validate({**spec.task, "task_id": task_id, "loop": spec.name})


def repair_task(loop: str, repair: RepairSpec, task_id: str, person: str | None) -> TaskSpec:
    """The repair task: its own act, or (``person`` named, after `landed repair done`) the
    person's word as its act's report; either way its read-back decides."""
    act = repair.act
    by_person = person is not None or act is None
    if by_person:
        act = ActSpec(name=PERSON_ACT, input={"by": person or "a person"})
    return TaskSpec(
        # A person's repair was made before this task starts: a before-state read now would
        # find it there already and call it vacuous. The runner honours this only with
        # LANDED_RUNNER_TASK_MAY_SKIP_PRE_READ on; otherwise the repair stays not verified
        # and the loop held (closed, never a repair taken on the person's word).
        pre_read=not by_person,
        task_id=task_id,
        owner=repair.owner,
        outcome=repair.outcome,
        target=repair.target,
        proof_plan=list(repair.proof_plan),
        act=act,
        loop=loop,
    )
