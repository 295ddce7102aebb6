"""The messages between the AgentTask workflow and its activities: inputs, reports, outputs."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from landed.probes.contract import Contract, Observation
from landed.receipts.model import Cost, ProofItem, Receipt
from landed.task.claim_contracts import ClaimOutcome, ResolvedClaim
from landed.task.spec import ActSpec, TaskSpec
from landed.task.trust import ApproverTrust

__all__ = [
    "ActInput",
    "ActReport",
    "ClaimInput",
    "ClaimOutput",
    "LookupInput",
    "LookupOutput",
    "PlanInput",
    "Progress",
    "ReadPhase",
    "ReceiptQuery",
    "Routing",
    "SettleInput",
    "SettleOutput",
    "Step",
    "VerifyInput",
    "VerifyOutput",
    "VerifyReading",
    "pre_read_on",
    "pre_reads",
    "spec_digest",
]


class ActReport(BaseModel):
    """What an act (the agent's side) says it did. Evidence for the verdict, never the verdict."""

    model_config = ConfigDict(extra="forbid")

    claimed_status: str = Field(min_length=1, description="The agent's word: done, blocked, ...")
    report: str = ""
    artifacts: list[ProofItem] = Field(
        default_factory=list, description="Cited artifacts (commit, file, log...); P2 at most."
    )
    exit_code: int | None = None
    cost: Cost = Field(default_factory=Cost)
    actor: str | None = Field(default=None, description="Worker identity that ran the act.")
    # --- fleet: blocked tasks (DOD-9) ---
    blocked_on: str | None = Field(
        default=None,
        max_length=2000,
        description="With claimed_status blocked: the exact outside condition the task waits on.",
    )
    clear_by: str | None = Field(
        default=None, max_length=500, description="With blocked: who can clear that condition."
    )

    @field_validator("cost")
    @classmethod
    def _cost_is_spent(cls, cost: Cost) -> Cost:
        # A negative figure would lower the cost per verified task of every other task.
        for name in ("input_tokens", "output_tokens", "usd"):
            value = getattr(cost, name)
            if value is not None and (
                value < 0 or (isinstance(value, float) and not math.isfinite(value))
            ):
                raise ValueError(
                    f"cost.{name} is {value}; report what the act spent: a finite number, zero "
                    "or more, or leave it out"
                )
        return cost


# --- step inputs and outputs (one model each) ---------------------------------------------------


# Defined before Routing, which holds one: a model whose field types are all defined when
# it is created has its validator built once, at import. Defined after, Routing's would be
# built again by every TypeAdapter of it: once per workflow run in the runner (the
# converter's adapter cache is per run), about a millisecond each
# (tests/task/test_spec_validation.py).
class ClaimOutput(BaseModel):
    """What the ledger knew when the claim was made."""

    settled: Receipt | None = Field(
        default=None,
        description="The ledger's receipt for this task id, when another run settled it: the "
        "act is not run, and that receipt is the answer.",
    )
    other_run: str | None = Field(
        default=None,
        description="The first other run that claimed an act of this task id and never settled "
        "(terminated, failed, reset): its act may have run, so this run does not act.",
    )
    other_at: datetime | None = None
    claimed_for: str | None = Field(
        default=None,
        description="The workflow run the claim was recorded for (None from runners before "
        "this field). A run reset from another keeps that run's recorded answers: one made "
        "for another run claims nothing for this one.",
    )


class Routing(BaseModel):
    """Where the steps run, as the runner is configured (read once, recorded in history)."""

    actor_task_queue: str
    verifier_task_queue: str
    runner: str = Field(description="Runner worker identity; the receipt's verdict_by.")
    trusted_keys: list[str] = Field(
        default_factory=list,
        description="PEM public keys of the verifiers whose signatures the runner accepts.",
    )
    pre_read: bool = Field(
        default=True, description="The runner reads each step's before-state (the operator's)."
    )
    task_may_skip_pre_read: bool = Field(
        default=False, description="The runner honours a task's pre_read: false."
    )
    confirm_reads: bool = Field(
        default=True,
        description="A passing read-back is confirmed by a second read after the task's quiet "
        "interval before it settles as done (the operator's; off only to measure its cost).",
    )
    claim: ClaimOutput | None = Field(
        default=None,
        description="Set when the plan claimed the first act for this run (no pre-read between "
        "them): what the ledger knew then.",
    )
    other_claim: ClaimOutput | None = Field(
        default=None,
        description="Set when the plan claimed nothing (a pre-read comes first, or the run will "
        "not act) and found that another run of this task id was about to act and never settled.",
    )
    settled: Receipt | None = Field(
        default=None,
        description=(
            "The ledger's receipt for this task id, when an earlier run settled it (Temporal "
            "forgets closed runs after its retention; the ledger does not): handed back as is, "
            "and the act is not run again."
        ),
    )
    # GOV-4: the deployment's time cap, for tasks that name none (LANDED_RUNNER_TIME_CAP).
    time_cap: timedelta | None = Field(
        default=None, description="The deployment's cap for tasks that name none."
    )
    # --- fleet: harness pool (GOV-10) and verification cost (GOV-8) ---
    actor_pool: list[str] = Field(
        default_factory=list,
        description="Further actor task queues (harnesses) an act is dispatched to when the "
        "one it was sent to is unavailable (expired auth, usage limit, outage).",
    )
    verify_usd_per_second: float = Field(
        default=0.0,
        ge=0,
        description="The operator's price of one second of the verifier's probe time, so the "
        "verify phase's dollars count in the cost per verified task.",
    )
    # GOV-5: who may decide at the approval gate (None: nobody; a held task cannot be approved).
    approval: ApproverTrust | None = Field(
        default=None,
        description="The approver keys the runner trusts, their groups, and the actor's "
        "identities (LANDED_RUNNER_APPROVERS, _APPROVER_GROUPS, _ACTOR_IDENTITY).",
    )
    # A claim by outcome class: the operator's contract for it, resolved by the runner.
    claim_contract: ResolvedClaim | None = None


class PlanInput(BaseModel):
    task_id: str
    spec_sha256: str = Field(
        default="", description="spec_digest() of the task: a settled receipt must be of it."
    )
    run_id: str = Field(
        default="",
        description="The run planning the task. With no pre-read between the plan and the first "
        "act (they are then in one workflow task), the plan claims that act for this run.",
    )
    pre_read: bool = Field(default=True, description="The task's own pre_read setting.")
    steps: int = Field(
        default=0,
        ge=0,
        description="How many reads the pre-read makes: the proof plan's steps and its frames.",
    )
    will_act: bool = Field(
        default=True,
        description="False for a run that will not act (cancelled before its plan): it claims "
        "nothing, and its own claim, if an earlier try made one, is not another run's.",
    )
    owner: str | None = Field(default=None, description="The task's owner, for its claim.")
    loop: str | None = Field(default=None, description="The task's loop, for its claim.")
    claim_outcome: ClaimOutcome | None = Field(
        default=None, description="A VerifyClaim's outcome class: the runner resolves its plan."
    )
    # --- fleet: the kill switch (GOV-4) ---
    gated: bool = Field(
        default=False,
        description="The fleet gate runs between the plan and the first act (the switch is "
        "read first): the plan claims nothing, the first attempt claims after the gate.",
    )


def pre_read_on(routing: Routing, task_pre_read: bool) -> bool:
    """Whether the before-state is read: the operator's choice (the runner's settings), not the
    agent's; a task's pre_read: false counts only where the runner allows it."""
    return routing.pre_read and (task_pre_read or not routing.task_may_skip_pre_read)


def pre_reads(routing: Routing, task_pre_read: bool, steps: int) -> bool:
    """Whether the run reads a before-state before its act (it has plan steps to read)."""
    return steps > 0 and pre_read_on(routing, task_pre_read)


class ActInput(BaseModel):
    task_id: str
    attempt: int
    idempotency_key: str
    act: ActSpec
    claimed_for: str | None = Field(
        default=None,
        description="The workflow run whose ledger claim this attempt runs under: the actor runs "
        "it only for that run (None: a runner from before claims named none).",
    )
    owner: str | None = Field(
        default=None,
        description="The task's owner (the agent): the act's span names it (gen_ai.agent.name).",
    )
    # GOV-5 (landed.governance.gates): the person who approved this act at the approval gate.
    approved_by: str | None = Field(
        default=None,
        description="Who approved the act at the gate; an act registered irreversible runs "
        "only with one.",
    )


#: What a read is of, signed with each reading: a plan step before or after the act, or a frame
#: (``landed.task.frames``) before or after it. A frame reading is judged as a state, never
#: against a before-state, and is never a read-back of the outcome.
ReadPhase = Literal["before", "after", "frame-before", "frame-after"]


class VerifyInput(BaseModel):
    """Read these plan steps; ``before`` holds the pre-read per step (None: not read)."""

    task_id: str
    attempt: int = Field(description="The act attempt the read belongs to (signed with it).")
    phase: ReadPhase
    contracts: list[Contract]
    indexes: list[int]
    before: list[Observation | None] = Field(default_factory=list)
    read: int = Field(default=1, description="Which read of this phase (probe-error re-reads).")
    run_id: str = Field(default="", description="The workflow run the read belongs to (signed).")
    request: str = Field(
        default="", description="A fresh id for this read (signed): answers to it answer it only."
    )
    steps: int | None = Field(
        default=None,
        ge=1,
        description="How many steps the task's plan has (signed with each reading's step), so a "
        "receipt missing one step's read-back shows it.",
    )
    meaning: int = Field(
        default=1,
        description="What count, at_least and equals mean in the plan (1 for a run from before "
        "meanings were marked).",
    )


class VerifyReading(BaseModel):
    """One plan step as the verifier read it: the observation and the signed receipt entry."""

    index: int
    observation: Observation
    proof: ProofItem = Field(description="Receipt entry, signed by the verifier when it has a key.")
    refused: bool = Field(
        default=False,
        description="The verifier's configuration does not allow this probe: nothing was "
        "observed, and reading again cannot change that (never re-read).",
    )


class VerifyOutput(BaseModel):
    verifier: str
    key_id: str | None = None
    readings: list[VerifyReading]
    # --- fleet: verification cost (GOV-8) ---
    metered_usd: float | None = Field(
        default=None,
        ge=0,
        description="Dollars a metered provider charged for this read (None: none reported).",
    )


class SettleInput(BaseModel):
    receipt: Receipt
    run_started_at: datetime | None = Field(
        default=None,
        description="When the task's workflow run started (from its history), for the "
        "task-duration histogram; not part of the receipt.",
    )
    after_unknown_write: bool = Field(
        default=False,
        description="An act attempt ended in an error: a later attempt of this task may be "
        "settled already (by the run this one was reset from), and is then the record.",
    )


class ClaimInput(BaseModel):
    """What a run records in the ledger just before it schedules an act attempt."""

    task_id: str
    run_id: str
    attempt: int = Field(ge=1)
    spec_sha256: str
    #: The task's owner and loop, stored on the claim.
    owner: str | None = None
    loop: str | None = None


class LookupInput(BaseModel):
    """Which task's settled receipt to read from the runner's ledger."""

    task_id: str


class LookupOutput(BaseModel):
    """The task's latest settled receipt in the ledger, or None when it holds none."""

    receipt: Receipt | None = None


class SettleOutput(BaseModel):
    appended: bool = Field(description="False when (task_id, attempt) was already in the ledger.")
    ledger: str = ""
    settled_at: datetime | None = Field(
        default=None,
        description="Set only by runners from before `stored`: the settle time the ledger held "
        "for this receipt. Kept so their histories replay the same.",
    )
    stored: Receipt | None = Field(
        default=None,
        description="The ledger's receipt for this task and attempt when an earlier try of "
        "this run's settle step appended it (the runner stalled or was cut off, and the step "
        "graded again, maybe seeing a cancel the first try did not): the task ends with it.",
    )


class Step(StrEnum):
    PLANNED = "planned"
    PRE_READ = "pre-read"
    ACT = "act"
    RECONCILE = "reconcile"
    VERIFY = "verify"
    SETTLE = "settle"
    SETTLED = "settled"
    # Governance gates (landed.governance.gates): waiting for a person, reading consent.
    APPROVAL = "approval"
    CONSENT = "consent"


class Progress(BaseModel):
    """Query result: where the task is now."""

    task_id: str
    step: Step
    rung: str = Field(
        description="Highest rung proven so far: planned before the act reports, then the "
        "grade of its report and cited artifacts (no read-back yet), final once graded."
    )
    act_attempt: int = 0
    verdict: str | None = None
    proof_level: str | None = Field(
        default=None, description="Proof level of what is known so far; none before the act."
    )


class ReceiptQuery(BaseModel):
    """Query result: the receipt so far (verdict empty until the task is graded)."""

    receipt: Receipt
    settled: bool = False


def spec_digest(spec: TaskSpec) -> str:
    """sha256 of what the task asks (its JSON form without default values, keys sorted): which
    task a run or receipt is of. Defaults are left out so that a release adding a field with a
    default still recognises the tasks submitted before it."""
    # The meaning a plan is judged under is stamped at submit, not asked by the submitter: the
    # same plan sent again (after an upgrade) is still the same task, and attaches to its run.
    # Whether the cap was the deployment's is a mark of how the task was written, not what it asks.
    exclude = {"expect_meaning", "deployment_time_cap"}
    body = spec.model_dump(mode="json", exclude_defaults=True, exclude=exclude)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "v1:" + hashlib.sha256(text.encode()).hexdigest()
