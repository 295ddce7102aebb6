"""Every patch marker landed's workflows record, and the release that may remove it.

A ``workflow.patched(id)`` call keeps a history recorded before a change replaying as it ran.
Each id a workflow passes to it is a constant of this module, listed once in ``PATCHES`` with
the workflows that call it, why it exists and the first release that may drop its old branch.
A marker only tells a history recorded before a change from one recorded after: it is never
built at run time nor read as data (what a run decided is in its history's events).
tests/workflows/test_versions.py checks that every id used is listed here and every id listed
is used.

The policy (docs/operations.md, "Changing a workflow"): ``AgentTask``, ``VerifyClaim`` and
``LandedRecheck`` are pinned (``PINNED``): a run ends on the build that started it, so they
change by a new build and take no new patch; the patches below that they still call are kept
for histories recorded before, and go in ``remove_in``. The long-lived workflows
(``LONG_LIVED``) change behind a patch listed here, move to a new build by a versioning
override to auto-upgrade (replaying their current run there), and drop a patch once each of
them has continued as new on a build that has it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DURABLE_PATCH",
    "FLEET_GATE_PATCH",
    "LEDGER_STREAM",
    "LONG_LIVED",
    "PATCHES",
    "PINNED",
    "RECHECK_FRAMES_PATCH",
    "RELEASE_READS_BACK",
    "REPAIR_HOLD_RECORDED",
    "RETIRED",
    "SELF_PLAN_PATCH",
    "SILENCE_REREADS_LEDGER",
    "UNCHECKED_PATCH",
    "UNKNOWN_ACT_PATCH",
    "Patch",
]

#: Workflows a run of which ends on the build that started it: changed by a new build, with no
#: new patch.
PINNED = ("AgentTask", "VerifyClaim", "LandedRecheck")
#: Workflows that run for as long as the fleet (continued as new when their history grows):
#: changed behind a patch, moved to a new build by an auto-upgrade override.
LONG_LIVED = ("LandedTripwire", "LandedFleet", "LandedLedgerWitness")

#: Runs started before the fleet gate (GOV-4) existed replay without it.
FLEET_GATE_PATCH = "landed-fleet-gate"
#: Runs recorded before the durability reads replay without them (their histories hold none).
DURABLE_PATCH = "landed-durable-reads"
#: A pre-read refused by the verifier's configuration settles blocked before the act (runs
#: from before it acted and then settled on the read-back).
UNCHECKED_PATCH = "landed-unchecked-blocks"
#: An act the actor refused as unknown on the first attempt settles blocked, unread (runs from
#: before it read back and settled failed).
UNKNOWN_ACT_PATCH = "landed-unknown-act-blocks"
#: A harness release is read back before the act is dispatched again (runs that released
#: before this read replay without it).
RELEASE_READS_BACK = "release-reads-back"
#: Rechecks recorded before the recheck read frames replay without those reads (their
#: histories hold none, and they settled on the plan alone).
RECHECK_FRAMES_PATCH = "landed-recheck-frames"
#: Claims that bring their own plan settle on their evidence (at most P2) instead of being read
#: back by it; histories from before read it back, and replay so.
SELF_PLAN_PATCH = "claim-own-plan-not-proof"
#: A repair held is recorded in the ledger (the exporter's landed_repairs_held); a tripwire that
#: held one before this replays as it ran.
REPAIR_HOLD_RECORDED = "repair-hold-recorded"
#: Silence trips only once the ledger agrees (a read of the loop's settlements first);
#: histories that tripped on silence before this read was added replay without it.
SILENCE_REREADS_LEDGER = "silence-rereads-ledger"

#: The tripwire reads its loop's settlements from the ledger after a cursor, on every wake-up
#: and at least every landed.loops.stream.EVERY (a timer); runs recorded before replay without
#: those reads and that timer, and stream from their next run (continue-as-new) on.
LEDGER_STREAM = "tripwire-ledger-stream"


#: Patch ids a workflow called once and no build calls now, and why. A history holding one was
#: recorded on an earlier build of a pinned workflow and replays only there (its runs end on
#: the build that started them); none may be used again.
RETIRED: tuple[tuple[str, str], ...] = (
    (
        "landed-claim-again-after-reset",
        "with its per-attempt ids (-2, -3, ...): a reset run that held the old run's claim "
        "recorded a marker to claim again; the act now goes out under the claim it holds and "
        "the actor refuses it, an event in history (landed.workflows.claims)",
    ),
)


@dataclass(frozen=True)
class Patch:
    """One patch id: who calls it, why, and the first release that may remove its old branch."""

    id: str
    workflows: tuple[str, ...]
    why: str
    remove_in: str


_PINNED_UNTIL = (
    "0.2.0: the runs recorded without it ended on their own builds (pinned); the committed "
    "histories that lack it are recorded again or removed with it"
)
_LONG_LIVED_UNTIL = "0.2.0, once every tripwire has continued as new on a build that has it"

PATCHES: tuple[Patch, ...] = (
    Patch(FLEET_GATE_PATCH, ("AgentTask",), "the fleet gate before the first act", _PINNED_UNTIL),
    Patch(DURABLE_PATCH, ("AgentTask",), "the durability reads after the act", _PINNED_UNTIL),
    Patch(UNCHECKED_PATCH, ("AgentTask",), "a refused pre-read blocks the act", _PINNED_UNTIL),
    Patch(UNKNOWN_ACT_PATCH, ("AgentTask",), "an unknown act settles unread", _PINNED_UNTIL),
    Patch(RELEASE_READS_BACK, ("AgentTask",), "a harness release is read back", _PINNED_UNTIL),
    Patch(RECHECK_FRAMES_PATCH, ("LandedRecheck",), "the recheck reads frames", _PINNED_UNTIL),
    Patch(SELF_PLAN_PATCH, ("VerifyClaim",), "a claimant's own plan is not proof", _PINNED_UNTIL),
    Patch(REPAIR_HOLD_RECORDED, ("LandedTripwire",), "a held repair recorded", _LONG_LIVED_UNTIL),
    Patch(
        SILENCE_REREADS_LEDGER, ("LandedTripwire",), "silence reads the ledger", _LONG_LIVED_UNTIL
    ),
    Patch(LEDGER_STREAM, ("LandedTripwire",), "the ledger is the loop's stream", _LONG_LIVED_UNTIL),
)
