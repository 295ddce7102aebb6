"""``landed status``'s harness lines: which harnesses the fleet took out, until when (GOV-10)."""

from __future__ import annotations

from datetime import UTC, datetime

from landed.governance.harness import HarnessHealth, cooling_at

__all__ = ["cooling_lines"]


def cooling_lines(health: HarnessHealth | None, now: datetime | None = None) -> list[str]:
    """One line per harness cooling down now (the actor queue, until when, its last error)."""
    cooling = cooling_at(health, now or datetime.now(UTC))
    if health is None or not cooling:
        return ["harnesses: none cooling down"]
    lines = [f"harnesses cooling down ({len(cooling)}):"]
    for queue, until in sorted(cooling.items()):
        last = health.last_error.get(queue, "")
        lines.append(f"  {queue}: out until {until.isoformat()}" + (f" — {last}" if last else ""))
    return lines
