"""What each worker role runs: its workflows and activities, listed once as plain imports.

Each role imports only its own code when its worker is built: the actor never loads the
verifier's probes or the runner's workflows, and ``import landed.temporal.workers`` (the CLI,
the dev stack) loads none of them until a role is chosen. mypy checks these imports like any
other: workflows/ and activities/ are src/landed/workflows and src/landed/activities. Each
implementation is typed as its role's interface (landed.task.steps), the declaration the
workflows call, so mypy checks that it implements every step as declared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from landed.task.acts import collect_acts

if TYPE_CHECKING:
    from temporalio.client import Client

    from landed.ledger.base import Ledger
    from landed.loops.steps import LoopSteps
    from landed.probes.sources import SourceRegistry
    from landed.signing import KeyPair
    from landed.task.acts import ActFn
    from landed.task.claim_contracts import ClaimContracts
    from landed.task.messages import Routing
    from landed.task.steps import (
        Act,
        ActorAnswers,
        CanarySteps,
        Consent,
        FleetGateStep,
        RunnerAnswers,
        RunnerSteps,
        VerifierAnswers,
        Verify,
    )

__all__ = ["RoleWork", "actor", "actor_acts", "fleet", "runner", "verifier"]


@dataclass(frozen=True)
class RoleWork:
    """The workflows and activities one role's worker registers; ``checks``, those its role
    check worker registers (``landed.task.checkable.check_queue``)."""

    workflows: Sequence[type] = ()
    activities: Sequence[Callable[..., Any]] = ()
    checks: RoleWork | None = None


def actor_acts(modules: Iterable[str]) -> dict[str, ActFn]:
    """landed's built-in acts and those of the user's act modules (LANDED_ACTOR_ACTS)."""
    # GOV-9: person_act holds the act of a repair a person did (landed.person).
    from landed.activities import builtin_acts, person_act

    return collect_acts([builtin_acts, person_act, *modules])


def actor(
    acts: Mapping[str, ActFn], credentials: Mapping[str, str], identity: str, *, threads: int
) -> RoleWork:
    """The actor runs the act step: the one activity that changes the world; its sync acts on
    ``threads`` threads of its own."""
    from landed.activities.act import ActActivities

    act: Act = ActActivities(acts, credentials, identity, threads=threads)
    # No act without a check that can run: the client asks which acts are here first.
    from landed.activities.role_check import ActorCheck

    answers: ActorAnswers = ActorCheck(acts, identity)
    # On the task queue too: a runner of an earlier release asks there.
    checks = RoleWork(activities=[answers.act_known])
    return RoleWork(activities=[act.act, answers.act_known], checks=checks)


def verifier(registry: SourceRegistry, identity: str, key: KeyPair) -> RoleWork:
    """The verifier reads the world back through its own sources and signs what it read."""
    from landed.activities.verify import VerifyActivities

    verify: Verify = VerifyActivities(registry, identity, key)
    # GOV-6: consent and do-not-contact read before contact, under the verifier's identity.
    from landed.activities.consent import ConsentActivities

    consent: Consent = ConsentActivities(registry, identity)
    from landed.activities.config_check import VerifierCheck

    answers: VerifierAnswers = VerifierCheck(registry, identity)
    checks = RoleWork(activities=[answers.check_config])
    return RoleWork([], [verify.verify, consent.consent, answers.check_config], checks)


def runner(ledger: Ledger, routing: Routing, contracts: ClaimContracts | None = None) -> RoleWork:
    """The runner runs the workflows, and plans, claims, settles and looks up in its ledger."""
    from landed.activities.role_check import RunnerCheck

    # The rollout gate: a canary task on a new build before it takes traffic.
    from landed.activities.rollout_gate import RolloutGateActivities
    from landed.activities.runner import RunnerActivities
    from landed.workflows.agent_task import AgentTask
    from landed.workflows.receipt_lookup import ReceiptLookup
    from landed.workflows.recheck import Recheck
    from landed.workflows.role_check import LandedPreflight
    from landed.workflows.rollout_gate import RolloutGate

    # The claim-stream reconciler: claims from agents acting outside Temporal (no act).
    from landed.workflows.verify_claim import VerifyClaim

    # The ledger's witness: the runner's signed heads, outside the ledger.
    from landed.workflows.witness import Witness

    steps: RunnerSteps = RunnerActivities(ledger, routing, contracts)
    gate: CanarySteps = RolloutGateActivities(ledger, routing)
    work = RoleWork(
        workflows=[
            AgentTask,
            ReceiptLookup,
            Recheck,
            VerifyClaim,
            LandedPreflight,
            RolloutGate,
            Witness,
        ],
        activities=[
            steps.plan,
            steps.claim,
            steps.settle,
            steps.lookup,
            gate.facts,
            gate.verifier_current,
        ],
    )
    answers: RunnerAnswers = RunnerCheck(routing)
    # On the task queue too: a client of an earlier release starts its preflight there.
    checks = RoleWork(workflows=[LandedPreflight], activities=[answers.queues])
    work = RoleWork(work.workflows, [*work.activities, answers.queues], checks)
    return _with_loops(work, ledger)


def _with_loops(work: RoleWork, ledger: Ledger) -> RoleWork:
    """GOV-9: the runner also runs each loop's tripwire and the Schedules' loop runs."""
    from landed.activities.loops import LoopActivities
    from landed.workflows.loop_run import LoopRun
    from landed.workflows.tripwire import Tripwire

    loops: LoopSteps = LoopActivities(ledger)
    return RoleWork(
        workflows=[*work.workflows, Tripwire, LoopRun],
        activities=[
            *work.activities,
            loops.catch_up,
            loops.read_after,
            loops.record_trip,
            loops.last_trip,
        ],
        checks=work.checks,
    )


# --- fleet: the kill switch (GOV-4) ---
def fleet(client: Client, fleet_id: str) -> RoleWork:
    """The runner also holds the fleet's switch and the gate each act waits at."""
    from landed.activities.fleet import FleetActivities
    from landed.workflows.fleet import Fleet

    gate: FleetGateStep = FleetActivities(client, fleet_id)
    return RoleWork(workflows=[Fleet], activities=[gate.gate])
