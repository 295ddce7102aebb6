"""What the fleet's rules add to a task's receipt (pure): the blocker, the harness rotation,
the wait at a paused switch, and the cost by phase. All under ``landed``; other DoD readers
ignore them."""

from __future__ import annotations

from collections.abc import Mapping

from landed.governance.cost import VerifySpend, cost_by_phase
from landed.task.gate_messages import FleetGateAnswer
from landed.task.messages import ActReport

__all__ = ["blocker_of", "fleet_fields"]

_NAMED_NOBODY = "nobody was named by the act (DOD-9 asks it to say who can clear it)"


def blocker_of(report: ActReport) -> dict[str, str] | None:
    """A blocked report's condition and who can clear it (DOD-9); None when not blocked.

    An act that says blocked without naming the condition still parks the task: its report
    text stands in for the condition, and the receipt says nobody was named."""
    if report.claimed_status.strip().lower() != "blocked":
        return None
    condition = (report.blocked_on or "").strip() or (report.report or "").strip()
    return {
        "condition": condition or "the act named no condition",
        "clear_by": (report.clear_by or "").strip() or _NAMED_NOBODY,
    }


def fleet_fields(
    report: ActReport,
    *,
    harness: Mapping[str, object] | None,
    spend: VerifySpend,
    usd_per_second: float,
    paused: FleetGateAnswer | None,
) -> dict[str, object]:
    """The receipt's ``landed`` additions of the fleet's rules."""
    fields: dict[str, object] = {"cost": cost_by_phase(report.cost, spend, usd_per_second)}
    blocker = blocker_of(report)
    if blocker is not None:
        fields["blocked"] = blocker
    # A release, or a harness the fleet had taken out and the task skipped (GOV-10).
    if harness is not None and (harness.get("releases") or harness.get("cooled")):
        fields["harness"] = dict(harness)
    if paused is not None:
        switch = paused.switch
        fields["fleet_paused"] = {
            "fleet": paused.fleet_id,
            "by": switch.by if switch is not None else None,
            "at": switch.at.isoformat() if switch is not None and switch.at else None,
            "unreadable": paused.unreadable,
        }
    return fields
