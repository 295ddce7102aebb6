"""What each worker role runs: its workflows and activities, listed once as plain imports.

Each role imports only its own code when its worker is built: the actor never loads the
verifier's probes or the runner's workflows, and ``import landed.temporal.workers`` (the CLI,
the dev stack) loads none of them until a role is chosen.

mypy reads src/landed only: workflows/ and activities/ become landed.workflows and
landed.activities through the install's package mapping, which it cannot follow, hence the
ignores on their imports (the test suite runs them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from landed.task.acts import collect_acts

if TYPE_CHECKING:
    from temporalio.client import Client

    from landed.ledger.base import Ledger
    from landed.probes.sources import SourceRegistry
    from landed.signing import KeyPair
    from landed.task.acts import ActFn
    from landed.task.messages import Routing

__all__ = ["RoleWork", "actor", "actor_acts", "fleet", "runner", "verifier"]


@dataclass(frozen=True)
class RoleWork:
    """The workflows and activities one role's worker registers."""

    workflows: Sequence[type] = ()
    activities: Sequence[Callable[..., Any]] = ()


def actor_acts(modules: Iterable[str]) -> dict[str, ActFn]:
    """landed's built-in acts and those of the user's act modules (LANDED_ACTOR_ACTS)."""
    # GOV-9: person_act holds the act of a repair a person did (landed.person).
    from landed.activities import builtin_acts, person_act  # type: ignore[import-not-found]

    return collect_acts([builtin_acts, person_act, *modules])


def actor(
    acts: Mapping[str, ActFn], credentials: Mapping[str, str], identity: str, *, threads: int
) -> RoleWork:
    """The actor runs the act step: the one activity that changes the world; its sync acts on
    ``threads`` threads of its own."""
    from landed.activities.act import ActActivities  # type: ignore[import-not-found]

    act = ActActivities(acts, credentials, identity, threads=threads)
    return RoleWork(activities=[act.act])


def verifier(registry: SourceRegistry, identity: str, key: KeyPair) -> RoleWork:
    """The verifier reads the world back through its own sources and signs what it read."""
    from landed.activities.verify import VerifyActivities  # type: ignore[import-not-found]

    verify = VerifyActivities(registry, identity, key)
    # GOV-6: consent and do-not-contact read before contact, under the verifier's identity.
    from landed.activities.consent import ConsentActivities  # type: ignore[import-not-found]

    consent = ConsentActivities(registry, identity)
    return RoleWork(activities=[verify.verify, consent.consent])


def runner(ledger: Ledger, routing: Routing) -> RoleWork:
    """The runner runs the workflows, and plans, claims, settles and looks up in its ledger."""
    from landed.activities.runner import RunnerActivities  # type: ignore[import-not-found]
    from landed.workflows.agent_task import AgentTask  # type: ignore[import-not-found]
    from landed.workflows.receipt_lookup import ReceiptLookup  # type: ignore[import-not-found]
    from landed.workflows.recheck import Recheck  # type: ignore[import-not-found]

    # The claim-stream reconciler: claims from agents acting outside Temporal (no act).
    from landed.workflows.verify_claim import VerifyClaim  # type: ignore[import-not-found]

    steps = RunnerActivities(ledger, routing)
    work = RoleWork(
        workflows=[AgentTask, ReceiptLookup, Recheck, VerifyClaim],
        activities=[steps.plan, steps.claim, steps.settle, steps.lookup],
    )
    return _with_loops(work, ledger)


def _with_loops(work: RoleWork, ledger: Ledger) -> RoleWork:
    """GOV-9: the runner also runs each loop's tripwire and the Schedules' loop runs."""
    from landed.activities.loops import LoopActivities  # type: ignore[import-not-found]
    from landed.workflows.loop_run import LoopRun  # type: ignore[import-not-found]
    from landed.workflows.tripwire import Tripwire  # type: ignore[import-not-found]

    loops = LoopActivities(ledger)
    return RoleWork(
        workflows=[*work.workflows, Tripwire, LoopRun],
        activities=[*work.activities, loops.catch_up, loops.record_trip, loops.last_trip],
    )


# --- fleet: the kill switch (GOV-4) ---
def fleet(client: Client, fleet_id: str) -> RoleWork:
    """The runner also holds the fleet's switch and the gate each act waits at."""
    from landed.activities.fleet import FleetActivities  # type: ignore[import-not-found]
    from landed.workflows.fleet import Fleet  # type: ignore[import-not-found]

    gate = FleetActivities(client, fleet_id)
    return RoleWork(workflows=[Fleet], activities=[gate.gate])
