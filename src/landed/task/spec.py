"""The submitted agent task: its act, proof plan, gates, retry budget and time cap."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from landed.probes.contract import Contract
from landed.probes.expect import LEGACY_MEANING
from landed.receipts.ladder import READ_BACK_KINDS
from landed.task.gate_spec import (
    DEFAULT_APPROVAL_TIMEOUT,
    Contacts,
    IrreversibleKind,
    approval_timeout_problem,
)

__all__ = [
    "DEFAULT_CONFIRM_AFTER",
    "DEFAULT_TIME_CAP",
    "MAX_TIME_CAP",
    "ActSpec",
    "ApprovalGate",
    "ConsentGate",
    "Durability",
    "RetryBudget",
    "StepTimeouts",
    "TaskSpec",
    "TaskSpecError",
    "dod_proof_kind",
]

#: GOV-4: every task has a time cap; thirty minutes unless the task names another.
DEFAULT_TIME_CAP = timedelta(minutes=30)
#: The longest time cap a task may name (deploy/k8s sizes a drained version's sunset on it).
MAX_TIME_CAP = timedelta(days=7)

# Probe kind -> the DoD proof kind its read-back is filed under on the receipt. Kinds the DoD
# lists as read-back (record, http_contains, ...) can carry P3; file and git land as artifacts
# (P2 at most); a command probe is filed under its own name, which the DoD grades as an
# assertion: an arbitrary command is not an authoritative system of record.
_PROOF_KIND = {
    "record": "record",
    "http": "http_contains",
    "provider_object": "provider_object",
    "payment": "payment",
    "deployment": "deployment",
    "sent_log": "sent_log",
    "call_log": "call_log",
    "file": "file",
    "git": "commit",
    "command": "command",
}


def dod_proof_kind(probe_kind: str) -> str:
    """The DoD proof kind a probe's reading is filed under (unknown kinds stay as given)."""
    return _PROOF_KIND.get(probe_kind, probe_kind)


class _Strict(BaseModel):
    """Submitted data: an unknown or misspelt field is an error, never silently dropped."""

    model_config = ConfigDict(extra="forbid")


class ActSpec(_Strict):
    """Which act runs on the actor (a name registered with ``@landed.act``) and its input."""

    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    input: dict[str, Any] = Field(default_factory=dict)


class ApprovalGate(_Strict):
    """GOV-5, carried as data: whether a person must approve before the act runs, and who did.

    ``required`` makes the task wait at the approval gate (as ``irreversible`` does, which also
    names what cannot be undone); ``approver`` names the one person who may approve. A submitted
    ``approved_by``/``approved_at`` is never an approval: the receipt's approval comes from the
    decision made at the gate (``landed.governance.gates``).
    """

    required: bool = False
    approver: str | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None


class ConsentGate(_Strict):
    """GOV-6, carried as data: whom the act contacts and on what consent basis.

    ``contact`` is the person or address reached (None when the act contacts nobody);
    ``do_not_contact_source`` names the list checked before contact; ``basis`` records the consent
    (opt-in id, contract reference). Carried as data only: the enforced check before contact is
    declared with the task's ``contacts`` (``landed.task.gate_spec.Contacts``).
    """

    contact: str | None = None
    do_not_contact_source: str | None = None
    basis: str | None = None


def _within(value: timedelta, low: timedelta, high: timedelta, what: str, e_g: str) -> timedelta:
    """``value`` if low <= value <= high, else an error naming the bounds and a valid form."""
    if not low <= value <= high:
        raise ValueError(
            f"{what} must be between {_duration(low)} and {_duration(high)}; give seconds or "
            f"an ISO 8601 duration such as {e_g}"
        )
    return value


def _duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("second", 1)):
        if seconds and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return "0"


class RetryBudget(_Strict):
    """Bounds on the only two retries the workflow makes (everything else settles)."""

    verify_attempts: int = Field(
        default=3, ge=1, le=20, description="Reads of a probe that keeps erroring (probe-error)."
    )
    verify_backoff: timedelta = Field(
        default=timedelta(seconds=1), description="First wait before re-reading; doubles."
    )
    act_attempts: int = Field(
        default=2,
        ge=1,
        le=10,
        description="Act runs when a write is unknown and the read-back shows it did not land.",
    )

    @field_validator("verify_backoff")
    @classmethod
    def _backoff_bounds(cls, value: timedelta) -> timedelta:
        # A negative wait fails the workflow's timer on the first re-read, and the task would
        # never settle: refused here, with the field named.
        return _within(value, timedelta(0), timedelta(hours=1), "verify_backoff", "PT2S")


class StepTimeouts(_Strict):
    """How long a step may go silent before Temporal declares its worker lost."""

    act_heartbeat: timedelta = Field(default=timedelta(seconds=30))
    verify: timedelta = Field(default=timedelta(minutes=2))
    verify_heartbeat: timedelta = Field(default=timedelta(seconds=30))
    settle: timedelta = Field(default=timedelta(seconds=60))

    @field_validator("act_heartbeat", "verify", "verify_heartbeat", "settle")
    @classmethod
    def _step_bounds(cls, value: timedelta) -> timedelta:
        # Temporal refuses a zero or negative activity timeout when the workflow schedules the
        # step, after the act may have run: the task would never settle. Refused at submit.
        return _within(value, timedelta(seconds=1), timedelta(days=1), "a step timeout", "PT30S")


#: The quiet interval before the confirmation read when neither the step nor the task names
#: one. One second: a read-back takes 15-25 ms, so an undo seen in practice (0.3 s after
#: the act) lands well inside it, and a timer costs the runner no CPU while it waits (see
#: `python -m bench confirm` for the added latency and throughput).
DEFAULT_CONFIRM_AFTER = timedelta(seconds=1)


class Durability(_Strict):
    """How long a verified outcome must hold: the confirmation read and the recheck."""

    confirm_after: timedelta = Field(
        default=DEFAULT_CONFIRM_AFTER,
        description="Quiet interval before the second read of a passing read-back (per step: "
        "its contract's confirm_after).",
    )
    recheck_after: timedelta | None = Field(
        default=None,
        description="Horizon after settling at which a verified outcome is read again; a "
        "reading that no longer holds appends a `reversed` receipt. None: no recheck.",
    )

    @field_validator("confirm_after")
    @classmethod
    def _confirm_bounds(cls, value: timedelta) -> timedelta:
        return _within(value, timedelta(0), timedelta(hours=1), "durability.confirm_after", "PT1S")

    @field_validator("recheck_after")
    @classmethod
    def _recheck_bounds(cls, value: timedelta | None) -> timedelta | None:
        if value is None:
            return None
        low, high = timedelta(seconds=1), timedelta(days=30)
        return _within(value, low, high, "durability.recheck_after", "PT10M")


class TaskSpec(_Strict):
    """One agent task, named before work starts (DOD-1). ``task_id`` is the workflow id.

    The proof plan lists read-back contracts (probe + expectation) the verifier will run; a task
    whose plan has no read-back probe can run, but can never reach ``verified``.
    Probes name sources ("orders-db"), never DSNs or tokens: the verifier resolves them.
    """

    task_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]*$")
    owner: str = Field(min_length=1, max_length=200, description="GOV-1: the one agent owning it.")
    outcome: str = Field(min_length=1, description="The observable after-state (DOD-1).")
    target: str | None = Field(default=None, description="Where the outcome lives.")
    proof_plan: list[Contract] = Field(default_factory=list)
    frames: list[Contract] = Field(
        default_factory=list,
        max_length=100,
        description="Frame checks: reads that must pass their expectation and read the same "
        "before and after the act (other batches, a total, a tree outside the target). A frame "
        "that changed, or could not be read, makes the task not done.",
    )
    act: ActSpec
    idempotency_key: str | None = Field(
        default=None,
        max_length=200,
        description="Passed to every act attempt; defaults to the task id (DOD-10).",
    )
    time_cap: timedelta = Field(default=DEFAULT_TIME_CAP, description="GOV-4 time cap.")
    approval: ApprovalGate = Field(default_factory=ApprovalGate)
    consent: ConsentGate = Field(default_factory=ConsentGate)
    business_outcome_class: str | None = Field(
        default=None, description="P4 class (payment, customer_reached, visible_content, ...)."
    )
    loop: str | None = Field(default=None, description="The loop this task belongs to (GOV-9).")
    pre_read: bool = Field(
        default=True,
        description="Ask to skip the before-state read (false). The runner decides: it reads the "
        "before-state unless LANDED_RUNNER_PRE_READ is off, and honours false here only when "
        "LANDED_RUNNER_TASK_MAY_SKIP_PRE_READ is on; without a pre-read a constant probe "
        "(select 45) would pass as proof.",
    )
    retry: RetryBudget = Field(default_factory=RetryBudget)
    timeouts: StepTimeouts = Field(default_factory=StepTimeouts)
    expect_meaning: int | None = Field(
        default=None,
        description="What count, at_least and equals mean in this plan: 2, the value read (a "
        "change is expected with change). Set at submit; a stored plan without it was "
        "submitted before meanings were marked and keeps meaning 1 (counts judged the change).",
    )

    @property
    def meaning(self) -> int:
        """The meaning this plan is judged under (1 for a plan from before meanings)."""
        return self.expect_meaning if self.expect_meaning is not None else LEGACY_MEANING

    durability: Durability = Field(default_factory=Durability)

    @field_validator("owner")
    @classmethod
    def _plain_owner(cls, value: str) -> str:
        # The owner is a column of the ledger and a cell of the board: a control character
        # there breaks PostgreSQL's text (NUL) or the terminal showing it.
        bad = next((c for c in value if ord(c) < 32 or 127 <= ord(c) < 160), None)
        if bad is not None:
            raise ValueError(
                f"owner must be plain text; it holds the control character {bad!r}: name the "
                "agent without it"
            )
        return value

    @field_validator("time_cap")
    @classmethod
    def _time_cap_bounds(cls, value: timedelta) -> timedelta:
        # A field validator, so the error names the field (time_cap), not the document.
        low, high = timedelta(seconds=1), MAX_TIME_CAP
        return _within(value, low, high, "time_cap (GOV-4)", "PT30M")

    @model_validator(mode="after")
    def _bounds(self) -> TaskSpec:
        if self.idempotency_key is None:
            self.idempotency_key = self.task_id
        return self

    @property
    def read_back_steps(self) -> list[int]:
        """Indexes of plan steps whose proof kind can carry P3."""
        return [
            i
            for i, c in enumerate(self.proof_plan)
            if dod_proof_kind(c.probe.kind) in READ_BACK_KINDS
        ]

    @property
    def can_reach_verified(self) -> bool:
        return bool(self.read_back_steps)

    # --- governance gates (GOV-4, GOV-5, GOV-6; landed.governance.gates) ---------------------
    irreversible: IrreversibleKind | None = Field(
        default=None,
        description="GOV-5: the act cannot be undone (send, publish, spend, provision, "
        "migrate): the task waits for a person's approval before its pre-read and act.",
    )
    approval_timeout: timedelta = Field(
        default=DEFAULT_APPROVAL_TIMEOUT,
        description="How long the approval gate waits; past it the task settles held.",
    )
    contacts: Contacts | None = Field(
        default=None,
        description="GOV-6: the person the act reaches; consent and do-not-contact are read "
        "before the act, and a refusal (or a check that cannot be read) settles blocked.",
    )
    deployment_time_cap: bool = Field(
        default=False,
        description="Set when the submitted task named no time_cap: the runner's deployment "
        "cap (LANDED_RUNNER_TIME_CAP) then applies instead of the 30-minute default.",
    )

    @field_validator("approval_timeout")
    @classmethod
    def _approval_timeout_bounds(cls, value: timedelta) -> timedelta:
        problem = approval_timeout_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="before")
    @classmethod
    def _mark_default_cap(cls, data: Any) -> Any:
        # Read before defaults fill in: only the submitted document can tell a cap the task
        # named from the default. Kept as a field, so it survives Temporal's round trip.
        if isinstance(data, dict) and "time_cap" not in data and "deployment_time_cap" not in data:
            return {**data, "deployment_time_cap": True}
        return data


class TaskSpecError(ValueError):
    """A submitted task was rejected; ``problems`` lists (field, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {field}: {reason}" for field, reason in problems)
        super().__init__(f"invalid task spec; fix these fields and submit again:\n{lines}")
