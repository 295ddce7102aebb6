"""Names by which the workflow reaches its steps, and the search attributes it sets."""

from __future__ import annotations

__all__ = [
    "ACT_ACTIVITY",
    "AGENT_TASK_WORKFLOW",
    "CLAIM_ACTIVITY",
    "CLAIM_OF_ANOTHER_RUN",
    "LOOKUP_ACTIVITY",
    "LOOKUP_WORKFLOW",
    "PLAN_ACTIVITY",
    "RECHECK_WORKFLOW",
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
SEARCH_ATTRIBUTES = ("LandedVerdict", "LandedOwner", "LandedRung")

# --- fleet: the kill switch (GOV-4) ---
#: The control workflow holding the fleet's switch (one per namespace, id LANDED_RUNNER_FLEET_ID).
FLEET_WORKFLOW = "LandedFleet"
#: Its signal (a FleetFlip) and its query (the FleetSwitch).
FLEET_FLIP_SIGNAL = "flip"
FLEET_SWITCH_QUERY = "switch"
#: The runner's step read before each act is dispatched: may it act now?
FLEET_GATE_ACTIVITY = "landed.fleet_gate"
