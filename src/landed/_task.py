"""The agent task as data: what is submitted, what the act reports, and the step inputs."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticSerializationError, to_json

from landed._contract import Contract, Observation, probe_problem
from landed._ladder import READ_BACK_KINDS
from landed._receipt import Cost, ProofItem, Receipt

__all__ = [
    "ACT_ACTIVITY",
    "AGENT_TASK_WORKFLOW",
    "CLAIM_ACTIVITY",
    "CLAIM_OF_ANOTHER_RUN",
    "DEFAULT_TIME_CAP",
    "LOOKUP_ACTIVITY",
    "LOOKUP_WORKFLOW",
    "PLAN_ACTIVITY",
    "SEARCH_ATTRIBUTES",
    "SETTLE_ACTIVITY",
    "VERIFY_ACTIVITY",
    "ActInput",
    "ActReport",
    "ActSpec",
    "ApprovalGate",
    "ClaimInput",
    "ClaimOutput",
    "ConsentGate",
    "LookupInput",
    "LookupOutput",
    "PlanInput",
    "Progress",
    "ReceiptQuery",
    "RetryBudget",
    "Routing",
    "SettleInput",
    "SettleOutput",
    "Step",
    "StepTimeouts",
    "SubmitCheck",
    "TaskSpec",
    "TaskSpecError",
    "VerifyInput",
    "VerifyOutput",
    "VerifyReading",
    "check_spec",
    "dod_proof_kind",
    "pre_read_on",
    "pre_reads",
    "spec_digest",
]

#: Names by which the workflow reaches its steps; the workflow never imports activity code.
AGENT_TASK_WORKFLOW = "AgentTask"
ACT_ACTIVITY = "landed.act"
VERIFY_ACTIVITY = "landed.verify"
SETTLE_ACTIVITY = "landed.settle"
CLAIM_ACTIVITY = "landed.claim"
PLAN_ACTIVITY = "landed.plan"
#: The runner's read of a settled receipt from its ledger, for a task Temporal has forgotten.
LOOKUP_WORKFLOW = "LandedReceiptLookup"
LOOKUP_ACTIVITY = "landed.lookup"
#: The error type of an act the actor refused because its claim is another run's.
CLAIM_OF_ANOTHER_RUN = "ClaimOfAnotherRun"

#: Custom search attributes (all Keyword) the workflow upserts, so the Web UI and
#: ``temporal workflow list --query 'LandedVerdict="verified"'`` can filter settled tasks.
SEARCH_ATTRIBUTES = ("LandedVerdict", "LandedOwner", "LandedRung")

#: GOV-4: every task has a time cap; thirty minutes unless the task names another.
DEFAULT_TIME_CAP = timedelta(minutes=30)

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

    ``required`` marks an act that cannot be undone (send, publish, spend, provision, migrate);
    ``approver`` names who may approve; ``approved_by``/``approved_at`` record the approval given.
    Not enforced yet: AgentTask records these fields on the receipt as submitted and runs the
    act either way; holding an unapproved task as ``held`` belongs to landed's governance gates.
    """

    required: bool = False
    approver: str | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None


class ConsentGate(_Strict):
    """GOV-6, carried as data: whom the act contacts and on what consent basis.

    ``contact`` is the person or address reached (None when the act contacts nobody);
    ``do_not_contact_source`` names the list checked before contact; ``basis`` records the consent
    (opt-in id, contract reference). Not enforced yet: the check before contact belongs to
    landed's governance gates; this model only declares what that check needs.
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
        low, high = timedelta(seconds=1), timedelta(days=7)
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


class TaskSpecError(ValueError):
    """A submitted task was rejected; ``problems`` lists (field, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        lines = "\n".join(f"  {field}: {reason}" for field, reason in problems)
        super().__init__(f"invalid task spec; fix these fields and submit again:\n{lines}")


class SubmitCheck(BaseModel):
    """A validated spec plus what the submitter must know before it runs."""

    spec: TaskSpec
    warnings: list[str] = Field(default_factory=list)

    @property
    def can_reach_verified(self) -> bool:
        return self.spec.can_reach_verified


# Temporal refuses a payload over 2 MiB (its default blob size limit). The receipt the task
# settles repeats its outcome and target (the target twice) beside the report and the evidence,
# and must fit too: a task near the limit would act and then never settle. So a task may hold
# far less than a payload.
MAX_SPEC_BYTES = 256 * 1024


_JSON_DATA = (
    "pass JSON data (text, a number, true/false, null, a list, or an object with text keys)"
)
# JSON's own types, as json.loads returns them.
_PLAIN = (str, int, float, bool, type(None))
# Deeper than this, a value is not walked here: writing it as JSON refuses it (too deep).
_DEPTH = 300


def _as_json(spec: TaskSpec) -> str:
    try:
        return spec.model_dump_json()
    except PydanticSerializationError as exc:
        if "depth" in str(exc):
            raise TaskSpecError(
                [("(document)", "nested too deeply to write as JSON; a task spec is a flat object")]
            ) from None
        where = _unwritable(spec.model_dump(), ())
        if where is not None:
            raise TaskSpecError([_unwritable_problem(*where)]) from None
        raise TaskSpecError(
            [
                (
                    "(document)",
                    f"the task cannot be written as JSON ({str(exc).splitlines()[0]}); text "
                    "with a lone surrogate (such as \\ud800) is not Unicode: remove it",
                )
            ]
        ) from None


def _field(path: tuple[object, ...]) -> str:
    return ".".join(str(p) for p in path) or "(document)"


def _unwritable(value: Any, path: tuple[object, ...]) -> tuple[str, Any] | None:
    """The first value under ``value`` that cannot be written as JSON, with its field."""
    if len(path) > _DEPTH:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unwritable(item, (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _unwritable(item, (*path, i))
            if found is not None:
                return found
        return None
    try:
        to_json(value)
    except PydanticSerializationError:
        return _field(path), value
    return None


def _unwritable_problem(path: str, value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return path, (
            "the text holds a lone surrogate (such as \\ud800), which is not Unicode and "
            "cannot be written as JSON: remove it"
        )
    return path, (f"a value of type {type(value).__name__} cannot be written as JSON; {_JSON_DATA}")


def _plain(value: Any, depth: int = 0) -> bool:
    """JSON's own types all through (what json.loads returns): a trip through JSON keeps it."""
    if depth > _DEPTH:
        return False
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    if type(value) is list:
        return all(_plain(v, depth + 1) for v in value)
    return type(value) in _PLAIN


def _changed(sent: Any, read: Any, path: tuple[object, ...]) -> tuple[str, str] | None:
    """Where ``sent`` (the task as given) differs from ``read`` (it after a trip through JSON,
    as the act and the verifier receive it), and why; None when they are the same."""
    if isinstance(sent, dict) and isinstance(read, dict):
        for key, item in sent.items():
            if not isinstance(key, str):
                return _field((*path, key)), (
                    f"the key {key!r} is of type {type(key).__name__}, and JSON keys are text: "
                    f"it would arrive as {str(key)!r}; use text keys"
                )
            found = _changed(item, read.get(key), (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(sent, list | tuple) and isinstance(read, list) and len(sent) == len(read):
        # A tuple arrives as a list: the same JSON, so no change worth refusing.
        for i, (a, b) in enumerate(zip(sent, read, strict=True)):
            found = _changed(a, b, (*path, i))
            if found is not None:
                return found
        return None
    if sent == read and (
        type(sent) is type(read)
        # A str, int or float subclass (an enum member, say) arrives as its plain value.
        or (
            any(isinstance(sent, t) and type(read) is t for t in (str, int, float))
            and isinstance(sent, bool) == isinstance(read, bool)
        )
    ):
        return None
    return _field(path), (
        f"a value of type {type(sent).__name__} is not JSON data: it would arrive as the "
        f"{type(read).__name__} {to_json(read).decode()[:60]}; {_JSON_DATA}"
    )


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def check_spec(data: TaskSpec | Mapping[str, Any] | str | bytes) -> SubmitCheck:
    """Validate a task at submit; raise TaskSpecError naming each bad field and why."""
    built = data if isinstance(data, TaskSpec) else None
    if built is not None:
        # Re-validated: pydantic does not check assignments made after construction.
        data = _as_json(built)
    try:
        raw = (
            json.loads(data, object_pairs_hook=_no_duplicate_keys)
            if isinstance(data, str | bytes)
            else dict(data)
        )
    except _DuplicateKey as exc:
        raise TaskSpecError(
            [
                (
                    "(document)",
                    f"the key {exc.args[0]!r} appears twice in one object; JSON readers "
                    "disagree on which one counts, so give it once",
                )
            ]
        ) from None
    except UnicodeDecodeError:
        raise TaskSpecError(
            [("(document)", "not UTF-8 JSON text (binary data?); give the task spec as JSON")]
        ) from None
    except json.JSONDecodeError as exc:
        raise TaskSpecError([("(document)", f"not JSON: {exc}")]) from None
    except RecursionError:
        raise TaskSpecError(
            [("(document)", "JSON nested too deeply to read; a task spec is a flat object")]
        ) from None
    except (TypeError, ValueError) as exc:
        raise TaskSpecError([("(document)", f"not a task spec: {exc}")]) from None
    if not isinstance(raw, dict):
        raise TaskSpecError([("(document)", "a task spec is a JSON object")])
    try:
        json.dumps(raw, allow_nan=False, default=str)
    except ValueError:
        # Python's JSON reads NaN, Infinity and 1e400; the data converter would send each as
        # null, so the act and the verifier would run another task than the one submitted.
        raise TaskSpecError(
            [
                (
                    "(document)",
                    "the task holds NaN, Infinity or a number too large for a float; JSON has "
                    "no such number: give a finite one, or the value as text",
                )
            ]
        ) from None
    except (TypeError, RecursionError):
        pass  # judged below, where the field is named
    try:
        spec = TaskSpec.model_validate(raw)
    except RecursionError:
        raise TaskSpecError(
            [("(document)", "JSON nested too deeply to read; a task spec is a flat object")]
        ) from None
    except ValidationError as exc:
        raise TaskSpecError(
            [
                (".".join(str(p) for p in err["loc"]) or "(document)", err["msg"])
                for err in exc.errors()
            ]
        ) from None
    if built is not None or not (isinstance(data, str | bytes) or _plain(raw)):
        # Values built in code reach the act and the verifier as JSON: a Decimal would arrive
        # as text, a set as a list, a datetime as text, an integer key as text. Refused here,
        # so what runs is what was submitted.
        sent = built if built is not None else spec
        again = spec if built is not None else TaskSpec.model_validate_json(_as_json(spec))
        change = _changed(sent.model_dump(), again.model_dump(), ())
        if change is not None:
            raise TaskSpecError([change])
        spec = again
    problems = [
        (f"proof_plan.{i}.probe", why)
        for i, contract in enumerate(spec.proof_plan)
        if (why := probe_problem(contract.probe)) is not None
    ]
    if problems:
        raise TaskSpecError(problems)
    size = len(_as_json(spec).encode())
    if size > MAX_SPEC_BYTES:
        raise TaskSpecError(
            [
                (
                    "(document)",
                    f"the task is {size} bytes as JSON, over the {MAX_SPEC_BYTES} a task may "
                    "hold (its receipt repeats it and must fit in one Temporal payload); keep "
                    "large inputs in the system of record and pass a reference to them",
                )
            ]
        )
    warnings: list[str] = []
    if not spec.proof_plan:
        warnings.append(
            "proof_plan is empty: this task can never reach verified; add a read-back "
            "contract (probe + expect) naming where the outcome lives"
        )
    elif not spec.can_reach_verified:
        kinds = sorted({c.probe.kind for c in spec.proof_plan})
        warnings.append(
            f"no read-back probe in proof_plan (only {', '.join(kinds)}): this task can never "
            f"reach verified; add a record, http, provider_object, payment, deployment, "
            f"sent_log or call_log probe"
        )
    if spec.proof_plan and not spec.pre_read:
        warnings.append(
            "pre_read is false: the runner still reads the before-state unless its operator "
            "allows tasks to skip it (LANDED_RUNNER_TASK_MAY_SKIP_PRE_READ); without one a "
            "read-back cannot tell an outcome that already held from one the act produced"
        )
    if spec.proof_plan and spec.timeouts.verify > spec.time_cap:
        warnings.append(
            f"timeouts.verify ({spec.timeouts.verify}) is longer than time_cap "
            f"({spec.time_cap}): a read the cap cuts short is settled as not observed"
        )
    for i, c in enumerate(spec.proof_plan):
        if c.expect.type == "non_empty":
            warnings.append(
                f"proof_plan.{i}.expect is non_empty, the weak default: any output passes it"
            )
    return SubmitCheck(spec=spec, warnings=warnings)


# --- what the act returns -----------------------------------------------------------------------


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
# converter's adapter cache is per run), about a millisecond each (tests/test_task.py).
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
    steps: int = Field(default=0, ge=0, description="How many steps the proof plan declares.")
    will_act: bool = Field(
        default=True,
        description="False for a run that will not act (cancelled before its plan): it claims "
        "nothing, and its own claim, if an earlier try made one, is not another run's.",
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


class VerifyInput(BaseModel):
    """Read these plan steps; ``before`` holds the pre-read per step (None: not read)."""

    task_id: str
    attempt: int = Field(description="The act attempt the read belongs to (signed with it).")
    phase: Literal["before", "after"]
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


class SettleInput(BaseModel):
    receipt: Receipt
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
    body = spec.model_dump(mode="json", exclude_defaults=True)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "v1:" + hashlib.sha256(text.encode()).hexdigest()
