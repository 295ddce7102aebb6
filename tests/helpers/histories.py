"""Committed workflow histories: where they live, how a test keeps one, and every landed
workflow a replay needs.

A history is kept only with LANDED_RECORD_HISTORIES=1, after a deliberate change to a
workflow's commands (and running workflows drained before such a change is deployed); every
committed history must replay with the current code (tests/temporal/test_committed_histories)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio.client import WorkflowHistory

__all__ = ["HISTORIES", "all_workflows", "keep", "patches"]

HISTORIES = Path(__file__).resolve().parent.parent / "temporal" / "histories"


def keep(history: WorkflowHistory, path: Path) -> bool:
    """Write ``history`` to ``path`` (under HISTORIES) when recording is on; whether it did."""
    if os.environ.get("LANDED_RECORD_HISTORIES") != "1":
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
    return True


def patches(history: WorkflowHistory) -> list[str]:
    """The patch ids a history's patch markers record."""
    ids = []
    for event in history.events:
        if event.HasField("marker_recorded_event_attributes"):
            marker = event.marker_recorded_event_attributes
            if marker.marker_name == "core_patch":
                for payloads in marker.details.values():
                    ids += [json.loads(p.data).get("id") for p in payloads.payloads]
    return ids


def all_workflows() -> list[type]:
    """Every workflow class a landed worker registers (the runner's, its loops', the fleet's)."""
    from landed.workflows.agent_task import AgentTask
    from landed.workflows.fleet import Fleet
    from landed.workflows.loop_run import LoopRun
    from landed.workflows.receipt_lookup import ReceiptLookup
    from landed.workflows.recheck import Recheck
    from landed.workflows.role_check import LandedPreflight
    from landed.workflows.rollout_gate import RolloutGate
    from landed.workflows.tripwire import Tripwire
    from landed.workflows.verify_claim import VerifyClaim
    from landed.workflows.witness import Witness

    return [
        AgentTask,
        Fleet,
        LandedPreflight,
        LoopRun,
        ReceiptLookup,
        Recheck,
        RolloutGate,
        Tripwire,
        VerifyClaim,
        Witness,
    ]
