"""Names by which the workflow reaches its steps, and the search attributes it sets."""

from __future__ import annotations

__all__ = [
    "ACT_ACTIVITY",
    "AGENT_TASK_WORKFLOW",
    "APPROVAL_REQUIRED",
    # governance gates
    "APPROVE_UPDATE",
    "CLAIM_ACTIVITY",
    "CLAIM_OF_ANOTHER_RUN",
    "CONSENT_ACTIVITY",
    "GATE_QUERY",
    "LOOKUP_ACTIVITY",
    "LOOKUP_WORKFLOW",
    "PLAN_ACTIVITY",
    "RECHECK_WORKFLOW",
    "REJECT_UPDATE",
    "SEARCH_ATTRIBUTES",
    "SETTLE_ACTIVITY",
    "VERIFY_ACTIVITY",
]

#: Names by which the workflow reaches its steps; the workflow never imports activity code.
AGENT_TASK_WORKFLOW = "AgentTask"
ACT_ACTIVITY = "landed.act"
VERIFY_ACTIVITY = "landed.verify"
SETTLE_ACTIVITY = "landed.settle"
CLAIM_ACTIVITY = "landed.claim"
PLAN_ACTIVITY = "landed.plan"
#: A verified outcome read again after its horizon (landed.task.durability).
RECHECK_WORKFLOW = "LandedRecheck"
#: The runner's read of a settled receipt from its ledger, for a task Temporal has forgotten.
LOOKUP_WORKFLOW = "LandedReceiptLookup"
LOOKUP_ACTIVITY = "landed.lookup"
#: The error type of an act the actor refused because its claim is another run's.
CLAIM_OF_ANOTHER_RUN = "ClaimOfAnotherRun"

#: Custom search attributes (all Keyword) the workflow upserts, so the Web UI and
#: ``temporal workflow list --query 'LandedVerdict="verified"'`` can filter settled tasks.

# --- governance gates (landed.governance.gates) -------------------------------------------------
#: The verifier's consent and do-not-contact check before an act that contacts a person (GOV-6).
CONSENT_ACTIVITY = "landed.consent"
#: The Workflow Updates by which a person decides at the approval gate (GOV-5), and its query.
APPROVE_UPDATE = "approve"
REJECT_UPDATE = "reject"
GATE_QUERY = "gate"
#: The error type of an act registered irreversible that was asked to run without an approval.
APPROVAL_REQUIRED = "ApprovalRequired"
# --- the claim-stream reconciler (landed reconcile) ---
#: A claim from an agent that acted outside Temporal, read back and settled (no act).
VERIFY_CLAIM_WORKFLOW = "VerifyClaim"
__all__ += ["VERIFY_CLAIM_WORKFLOW"]
SEARCH_ATTRIBUTES = ("LandedVerdict", "LandedOwner", "LandedRung", "LandedLoop")

# --- loops and tripwires (GOV-9) ---------------------------------------------------------------
#: A Schedule's action: derives the run's task id from its scheduled time and starts it.
LOOP_RUN_WORKFLOW = "LandedLoopRun"
#: One per loop: watches its settlements, trips, and queues exactly one repair.
TRIPWIRE_WORKFLOW = "LandedTripwire"
CATCH_UP_ACTIVITY = "landed.tripwire.catch_up"
#: Signals and the query of the Tripwire workflow.
SETTLED_SIGNAL = "settled"
REPAIR_DONE_SIGNAL = "repair_done"
STOP_SIGNAL = "stop"
STATE_QUERY = "state"
#: The loop a task belongs to, searchable (set at start by landed.Client and the loop's run).
LOOP_ATTRIBUTE = "LandedLoop"  # the last of SEARCH_ATTRIBUTES above

# --- fleet: the kill switch (GOV-4) ---
#: The control workflow holding the fleet's switch (one per namespace, id LANDED_RUNNER_FLEET_ID).
FLEET_WORKFLOW = "LandedFleet"
#: Its signal (a FleetFlip) and its query (the FleetSwitch).
FLEET_FLIP_SIGNAL = "flip"
FLEET_SWITCH_QUERY = "switch"
#: The runner's step read before each act is dispatched: may it act now?
FLEET_GATE_ACTIVITY = "landed.fleet_gate"
# --- trip events in the ledger (GOV-9) ---------------------------------------------------------
#: Records a trip as an append-only ledger event (keyed by loop and trip number).
RECORD_TRIP_ACTIVITY = "landed.tripwire.record_trip"
#: Reads the loop's last recorded trip, so a tripwire started again numbers on from it.
LAST_TRIP_ACTIVITY = "landed.tripwire.last_trip"
#: The kind of a trip's ledger event.
TRIP_EVENT = "tripwire.trip"
#: The kind of the event a trip gets when its repair's retries ran out: held for a person.
HELD_EVENT = "tripwire.held"
__all__ += ["HELD_EVENT", "LAST_TRIP_ACTIVITY", "RECORD_TRIP_ACTIVITY", "TRIP_EVENT"]

# --- fleet-wide harness cool-down (GOV-10) ---
#: The control workflow's signal a runner sends when a task's harness was unavailable.
FLEET_HARNESS_SIGNAL = "harness-failed"
# --- deploying (deploy/k8s/overlays/worker-controller) ---
#: Runs one canary task on a new build before it takes traffic (landed.task.canary).
ROLLOUT_GATE_WORKFLOW = "LandedRolloutGate"
CANARY_FACTS_ACTIVITY = "landed.canary_facts"
CANARY_VERIFIER_ACTIVITY = "landed.canary_verifier"
#: The error type of a gate whose canary did not prove the build.
ROLLOUT_GATE_FAILED = "RolloutGateFailed"
__all__ += [
    "CANARY_FACTS_ACTIVITY",
    "CANARY_VERIFIER_ACTIVITY",
    "ROLLOUT_GATE_FAILED",
    "ROLLOUT_GATE_WORKFLOW",
]
