"""What "cannot be checked" means, in one place: no act runs when nothing can check it.

A task cannot be checked when the actor does not know its act, or when the verifier's own
configuration refuses a probe of its plan or frames (a source it lacks, a command it does not
allow: ``landed.probes.policy.verifier_refusal``), or lacks the consent check's source. The
client asks the running roles before a task starts (``landed.temporal.role_check``); the
workflow, which cannot trust that the client asked, settles ``blocked`` before any act when its
pre-read is refused or its actor refuses the act as unknown (``landed.workflows.unchecked``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from landed.probes.contract import Contract
from landed.receipts.model import Receipt
from landed.task.messages import ActReport
from landed.task.spec import TaskSpec

__all__ = ["ACT_KNOWN_ACTIVITY", "CHECK_CONFIG_ACTIVITY", "PREFLIGHT_WORKFLOW", "UNKNOWN_ACT"]
__all__ += ["ROLE_QUEUES_ACTIVITY", "ActKnownInput", "ActKnownOutput", "ConfigInput"]
__all__ += ["ConfigOutput", "PreflightInput", "PreflightOutput", "RoleQueues", "act_problem"]
__all__ += ["blocked_report", "config_problems", "refusal_text", "to_check", "with_fix_first"]
__all__ += ["CLEAR_BY", "FINDING_RULE", "cache_key", "check_queue", "refused_step", "silent_role"]

PREFLIGHT_WORKFLOW = "LandedPreflight"
ROLE_QUEUES_ACTIVITY = "landed.role_queues"
ACT_KNOWN_ACTIVITY = "landed.act_known"
CHECK_CONFIG_ACTIVITY = "landed.check_config"
#: The actor's error type for an act it does not know (it ran nothing).
UNKNOWN_ACT = "UnknownAct"
#: The rule a blocked receipt's first finding is under: a blocker names its condition (DOD-9).
FINDING_RULE = "DOD-9"
CLEAR_BY = "the operator of the roles: configure the verifier's source or register the act"
_NO_CHECK = "submit with the check off (--no-role-check, Client(check_roles=False)) to start it"


def check_queue(queue: str) -> str:
    """Where the role polling ``queue`` answers the role check: a queue of its own, served by a
    worker with its own slots in the same process, so that running acts, reads or tasks that
    fill the role's slots never hold an answer back."""
    return f"{queue}-check"


class RoleQueues(BaseModel):
    actor: str
    verifier: str


class ActKnownInput(BaseModel):
    act: str


class ActKnownOutput(BaseModel):
    actor: str
    problem: str | None = None
    #: Every act the actor has registered (``landed doctor`` shows them).
    registered: list[str] = Field(default_factory=list)


class ConfigInput(BaseModel):
    """What the verifier must be able to read: each labelled probe, and bare sources."""

    labels: list[str] = Field(default_factory=list)
    contracts: list[Contract] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class ConfigOutput(BaseModel):
    verifier: str
    problems: list[str] = Field(default_factory=list)


class PreflightInput(BaseModel):
    act: str
    config: ConfigInput
    timeout_s: float = Field(default=5.0, gt=0, le=60)


class PreflightOutput(BaseModel):
    """Each problem names its fix; ``silent`` names each role that did not answer in time."""

    problems: list[str] = Field(default_factory=list)
    silent: list[str] = Field(default_factory=list)
    queues: RoleQueues | None = None
    #: The acts the actor has registered; None when the actor did not answer.
    acts: list[str] | None = None


def to_check(spec: TaskSpec) -> PreflightInput:
    """What a task needs checkable before it starts: its act, every plan step and frame
    probe, and the consent check's source."""
    labels = [f"plan step {i + 1} ({c.action})" for i, c in enumerate(spec.proof_plan)]
    labels += [f"frame {i + 1} ({c.action})" for i, c in enumerate(spec.frames)]
    sources = [spec.contacts.consent_source] if spec.contacts is not None else []
    config = ConfigInput(labels=labels, contracts=[*spec.proof_plan, *spec.frames], sources=sources)
    return PreflightInput(act=spec.act.name, config=config)


def act_problem(name: str, known: Iterable[str]) -> str | None:
    """Why the actor cannot run act ``name`` (with the fix), or None when it is registered."""
    names = sorted(known)
    if name in names:
        return None
    return (
        f"no act named {name!r} on this actor (registered: {', '.join(names) or 'none'}); "
        f"register it with @landed.act({name!r}) in a module listed in LANDED_ACTOR_ACTS"
    )


def config_problems(
    inp: ConfigInput,
    refusal: Callable[[Any], str | None],
    source_problem: Callable[[str], str | None],
) -> list[str]:
    """Each probe the verifier's configuration refuses and each source it lacks, labelled;
    the verify activity refuses the same probes with the same ``refusal``."""
    found = [
        f"{label}: {why}"
        for label, contract in zip(inp.labels, inp.contracts, strict=True)
        if (why := refusal(contract.probe)) is not None
    ]
    for name in inp.sources:
        if (why := source_problem(name)) is not None:
            found.append(f"consent source {name!r}: {why}")
    return found


def refused_step(phase: str, index: int, message: str | None) -> str:
    """A refused pre-read as a problem: which step or frame, and the verifier's refusal."""
    what = "frame" if phase.startswith("frame") else "plan step"
    return f"{what} {index + 1}: {message or 'refused by the verifier'}"


def refusal_text(task_id: str, problems: Sequence[str], silent: Sequence[str]) -> str:
    """The client's refusal: every problem with its fix, and how to start the task anyway."""
    said = "; ".join([*problems, *silent])
    return (
        f"task {task_id!r} was not started: nothing could check it ({said}). Fix that, then "
        f"submit again; or {_NO_CHECK} anyway (it settles blocked, with no act, if still so)"
    )


def blocked_report(problems: Sequence[str]) -> ActReport:
    """The report of a task that cannot be checked: blocked, nothing acted (DOD-9)."""
    condition = "nothing could check this task: " + "; ".join(problems)
    return ActReport(
        claimed_status="blocked",
        report=f"Not acted: {condition}.",
        blocked_on=condition,
        clear_by=CLEAR_BY,
    )


def with_fix_first(receipt: Receipt, problems: Sequence[str]) -> Receipt:
    """The receipt with the fix as its first finding, where `submit --wait` shows it first."""
    ext = receipt.landed
    if ext is None:
        return receipt
    first = f"{FINDING_RULE}: blocked before any act, nothing could check it: " + "; ".join(
        problems
    )
    findings = [first, *getattr(ext, "findings", [])]
    return receipt.model_copy(update={"landed": ext.model_copy(update={"findings": findings})})


def silent_role(role: str, queue: str, timeout_s: float, why: str) -> str:
    """A role that did not answer: which, where, and how to start it (fail closed)."""
    return (
        f"the {role} on task queue {queue!r} gave no answer within {timeout_s:g} s ({why}): "
        f"start `landed worker {role}` of this release (or `landed dev`) on that queue"
    )


def cache_key(inp: PreflightInput) -> str:
    """What of a check the roles' answer depends on: the act, and each probe as the verifier's
    configuration judges it (a record probe by its kind and source alone; its query and
    parameters are the task's data). Equal keys get equal answers from the same roles."""
    probes = [
        {"kind": c.probe.kind, "source": getattr(c.probe, "source", None)}
        if c.probe.kind == "record"
        else c.probe.model_dump(mode="json")
        for c in inp.config.contracts
    ]
    # The labels too: an answer shared by tasks asked together names their steps.
    what = [inp.act, inp.config.labels, probes, sorted(inp.config.sources)]
    return json.dumps(what, sort_keys=True)
