"""Each role's activities, declared once as typed interfaces.

A workflow calls a step by reference (``workflow.execute_activity_method(Verify.verify, ...)``),
so mypy checks the argument it passes and the result it reads, and the result is decoded as the
declared type with no ``result_type`` written by hand. The activity type names are those of
``landed.task.names`` and ``landed.task.checkable`` (what histories record), so a call by
reference schedules exactly what a call by name did.

activities/ implements each interface (the worker assembly, ``landed.temporal.registry``, types
each implementation as its interface, so mypy checks every method), and the workflows import
these declarations, never an actor or verifier implementation.
"""

from __future__ import annotations

from typing import Protocol

from temporalio import activity

from landed.task.canary import CanaryFacts
from landed.task.checkable import (
    ACT_KNOWN_ACTIVITY,
    CHECK_CONFIG_ACTIVITY,
    ROLE_QUEUES_ACTIVITY,
    ActKnownInput,
    ActKnownOutput,
    ConfigInput,
    ConfigOutput,
    RoleQueues,
)
from landed.task.gate_messages import (
    ConsentInput,
    ConsentOutput,
    FleetGateAnswer,
    FleetGateInput,
)
from landed.task.messages import (
    ActInput,
    ActReport,
    ClaimInput,
    ClaimOutput,
    LookupInput,
    LookupOutput,
    PlanInput,
    Routing,
    SettleInput,
    SettleOutput,
    VerifyInput,
    VerifyOutput,
)
from landed.task.names import (
    ACT_ACTIVITY,
    CANARY_FACTS_ACTIVITY,
    CANARY_VERIFIER_ACTIVITY,
    CLAIM_ACTIVITY,
    CONSENT_ACTIVITY,
    FLEET_GATE_ACTIVITY,
    LOOKUP_ACTIVITY,
    PLAN_ACTIVITY,
    SETTLE_ACTIVITY,
    VERIFY_ACTIVITY,
)

__all__ = [
    "Act",
    "ActorAnswers",
    "CanarySteps",
    "Consent",
    "FleetGateStep",
    "RunnerAnswers",
    "RunnerSteps",
    "VerifierAnswers",
    "Verify",
]


# --- the actor's queue ---------------------------------------------------------------------------
class Act(Protocol):
    """The one activity that changes the world (activities.act.ActActivities)."""

    @activity.defn(name=ACT_ACTIVITY)
    async def act(self, inp: ActInput) -> ActReport: ...


class ActorAnswers(Protocol):
    """Whether an act is registered here (activities.role_check.ActorCheck)."""

    @activity.defn(name=ACT_KNOWN_ACTIVITY)
    async def act_known(self, inp: ActKnownInput) -> ActKnownOutput: ...


# --- the verifier's queue ------------------------------------------------------------------------
class Verify(Protocol):
    """Read each plan step back and sign what was read (activities.verify.VerifyActivities)."""

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify(self, inp: VerifyInput) -> VerifyOutput: ...


class Consent(Protocol):
    """Consent and do-not-contact, read before contact (activities.consent.ConsentActivities)."""

    @activity.defn(name=CONSENT_ACTIVITY)
    async def consent(self, inp: ConsentInput) -> ConsentOutput: ...


class VerifierAnswers(Protocol):
    """Whether its configuration allows a task's probes (activities.config_check)."""

    @activity.defn(name=CHECK_CONFIG_ACTIVITY)
    async def check_config(self, inp: ConfigInput) -> ConfigOutput: ...


# --- the runner's own (local) steps --------------------------------------------------------------
class RunnerSteps(Protocol):
    """Plan, claim, settle and look up in the ledger (activities.runner.RunnerActivities)."""

    @activity.defn(name=PLAN_ACTIVITY)
    async def plan(self, inp: PlanInput) -> Routing: ...

    @activity.defn(name=CLAIM_ACTIVITY)
    async def claim(self, inp: ClaimInput) -> ClaimOutput: ...

    @activity.defn(name=SETTLE_ACTIVITY)
    async def settle(self, inp: SettleInput) -> SettleOutput: ...

    @activity.defn(name=LOOKUP_ACTIVITY)
    async def lookup(self, inp: LookupInput) -> LookupOutput: ...


class RunnerAnswers(Protocol):
    """The actor's and the verifier's queues (activities.role_check.RunnerCheck)."""

    @activity.defn(name=ROLE_QUEUES_ACTIVITY)
    async def queues(self) -> RoleQueues: ...


class FleetGateStep(Protocol):
    """May a task act now (activities.fleet.FleetActivities)."""

    @activity.defn(name=FLEET_GATE_ACTIVITY)
    async def gate(self, inp: FleetGateInput) -> FleetGateAnswer: ...


class CanarySteps(Protocol):
    """The rollout gate's reads (activities.rollout_gate.RolloutGateActivities)."""

    @activity.defn(name=CANARY_FACTS_ACTIVITY)
    async def facts(self, task_id: str) -> CanaryFacts: ...

    @activity.defn(name=CANARY_VERIFIER_ACTIVITY)
    async def verifier_current(self, build_id: str, wait_s: float) -> str | None: ...
