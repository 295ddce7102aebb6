"""AgentTask's state: where the run is, and what its act's attempts left for the verdict."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from landed.governance.cost import VerifySpend
    from landed.probes.contract import Observation
    from landed.receipts.model import ProofItem, Receipt
    from landed.task.messages import ActReport, Routing, Step

__all__ = ["ActFacts", "RunState"]


@dataclasses.dataclass
class RunState:
    """Where the run is and what it has read and graded: what the queries answer from."""

    step: Step = Step.PLANNED
    # The act's last attempt that started (0: none did).
    attempt: int = 0
    routing: Routing | None = None
    deadline: datetime | None = None
    pre_read: bool = True
    before: list[Observation | None] = dataclasses.field(default_factory=list)
    # Each frame's reading before and after the act (landed.task.frames); empty: not read.
    frames_before: list[Observation | None] = dataclasses.field(default_factory=list)
    frames_after: list[Observation | None] = dataclasses.field(default_factory=list)
    report: ActReport | None = None
    proofs: list[ProofItem] = dataclasses.field(default_factory=list)
    final: Receipt | None = None
    # When the last read was asked (see landed.task.readings.ReadScope.asked_at).
    asked_at: datetime | None = None
    # Set once a cancel is being settled: its own steps are not cut short by it.
    settling_cancel: bool = False
    # Governance gates (workflows/gates.py): who approved the act, and the cap the run is under.
    approved_by: str | None = None
    cap: timedelta | None = None
    # --- fleet: the verifier's spend on this task (GOV-8) ---
    verify_spend: VerifySpend = dataclasses.field(default_factory=VerifySpend)
    # Pre-reads the verifier refused by its configuration (landed.task.checkable).
    refused: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ActFacts:
    """What the act's attempts and claims left that the verdict must say."""

    error: str | None = None
    # Identities that failed an act attempt: an act that errored leaves no report naming its
    # actor, and a reading made under one of them is still the actor grading itself.
    actors: list[str] = dataclasses.field(default_factory=list)
    unknown_write: str | None = None
    # Another run of this id was about to act and never settled (see judge_claim).
    lost_run: str | None = None
    settled_elsewhere: Receipt | None = None
    # The run whose ledger claim the act attempt about to start runs under.
    claimed_for: str | None = None
    # The actor refused the first attempt's act as unknown: nothing ran (landed.task.checkable).
    unknown_act: str | None = None
