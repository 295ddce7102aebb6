"""Cost per attempt by phase (GOV-8): the act's tokens and dollars, and the verifier's own.

The act's cost is what its report says it spent. The verifier's is measured by landed: the
probe time of every read the task asked for (before-state, read-back, confirmation, frames,
reconciling reads), priced by the operator's rate per probe second, plus any dollars a metered
provider reported. Cost per verified task then includes the verification that proved it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from landed.receipts.model import Cost
from landed.task.messages import VerifyOutput

__all__ = ["VerifySpend", "cost_by_phase"]


@dataclass
class VerifySpend:
    """The verifier's spend on one task so far (workflow state, fed each read's answer)."""

    reads: int = 0
    probe_ms: float = 0.0
    metered_usd: float = 0.0

    def add(self, out: VerifyOutput) -> None:
        self.reads += 1
        for reading in out.readings:
            ms = reading.observation.duration_ms
            if math.isfinite(ms) and ms > 0:
                self.probe_ms += ms
        usd = out.metered_usd
        if usd is not None and math.isfinite(usd) and usd > 0:
            self.metered_usd += usd


def cost_by_phase(act: Cost, spend: VerifySpend, usd_per_second: float) -> dict[str, object]:
    """The receipt's ``landed.cost``: each phase's figures and the dollars of both.

    ``usd`` of the act is None when the act logged none: unknown is not zero, and the total is
    then None too (the scorecard counts receipts that log cost, GOV-8's coverage).
    """
    seconds = spend.probe_ms / 1000
    verify_usd = round(seconds * usd_per_second + spend.metered_usd, 9)
    act_usd = act.usd if act.usd is not None and math.isfinite(act.usd) else None
    return {
        "act": {
            "input_tokens": act.input_tokens,
            "output_tokens": act.output_tokens,
            "usd": act_usd,
        },
        "verify": {
            "reads": spend.reads,
            "probe_seconds": round(seconds, 6),
            "metered_usd": round(spend.metered_usd, 9),
            "usd": verify_usd,
        },
        "usd": None if act_usd is None else round(act_usd + verify_usd, 9),
    }
