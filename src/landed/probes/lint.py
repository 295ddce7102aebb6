"""Plan lint: would a plan's expectations catch a bad write? Judged on made-up readings.

Nothing is run. Each contract's expectation is handed the readings bad writes produce (nothing
landed, half, double, already there, wrong value, probe error, undone after the act) through
the judging entry points the verifier uses (``judge``, then ``judge_with_before`` when a
before-state is read), so a new expectation is linted by its own judge. Readings are built from
the expectation's value: first the good pair (a before and an after the expectation passes as
the act's write), then each bad write as a change of that pair.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from landed.probes.contract import Contract, Observation, Outcome
from landed.probes.expect import Judgement, judge, judge_with_before, label_for
from landed.probes.lint_writes import (
    ERROR,
    NOTHING,
    SCENARIOS,
    bad_writes,
    bump,
    candidates,
    reading_of,
    shown,
    wrapper,
)

__all__ = [
    "SCENARIOS",
    "PlanLint",
    "Scenario",
    "StepLint",
    "lint_contract",
    "lint_json",
    "lint_plan",
]


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Scenario:
    """One bad write as the plan would judge it; ``caught`` unless it would read ``pass``."""

    name: str
    before: str | None
    after: str
    outcome: str
    message: str

    @property
    def caught(self) -> bool:
        return self.outcome != Outcome.PASS.value


@dataclass(frozen=True)
class StepLint:
    """One contract's lint: every scenario, or why none could be built (``problem``)."""

    where: str
    action: str
    expectation: str
    scenarios: tuple[Scenario, ...] = ()
    problem: str | None = None

    @property
    def called_done(self) -> list[str]:
        return [s.name for s in self.scenarios if not s.caught]


@dataclass(frozen=True)
class PlanLint:
    steps: tuple[StepLint, ...]
    pre_read: bool

    @property
    def calls_bad_write_done(self) -> bool:
        return any(step.called_done for step in self.steps)

    @property
    def unjudged(self) -> bool:
        return any(step.problem is not None for step in self.steps)


def _judged(expect: Any, kind: str, leaf: Any) -> Judgement:
    if leaf is ERROR:
        return Judgement(Outcome.PROBE_ERROR, "the probe observed nothing (made up by the lint)")
    return judge(expect, reading_of(kind, leaf), probe_kind=kind)


def _outcome(contract: Contract, before: Any, after: Any, pre_read: bool) -> Judgement:
    """The outcome the verifier would observe for this before and after."""
    expect, kind = contract.expect, contract.probe.kind
    judged = _judged(expect, kind, after)
    if not pre_read or judged.outcome is Outcome.PROBE_ERROR:
        return judged
    first = _judged(expect, kind, before)
    prior = Observation(
        outcome=first.outcome,
        expectation=label_for(contract.probe, expect),
        kind=kind,
        observer="landed plan lint",
        observed_at=_EPOCH,
        duration_ms=0.0,
        value=first.value,
        message=first.message,
    )
    return judge_with_before(expect, judged, prior)


def _good_pair(contract: Contract, pre_read: bool) -> tuple[Any, Any, Any] | None:
    """(before, after, other before): a write this plan calls done, or None if none is found."""
    wrap = wrapper(contract.expect)
    for after in candidates(contract.expect):
        befores = [NOTHING, bump(after)]
        for i, before in enumerate(befores):
            judged = _outcome(contract, wrap(before), wrap(after), pre_read)
            if judged.outcome is Outcome.PASS:
                return before, after, befores[1 - i]
    return None


def lint_contract(contract: Contract, *, where: str, pre_read: bool = True) -> StepLint:
    """The bad writes ``contract`` would catch and those it would call done."""
    label = label_for(contract.probe, contract.expect)
    step = StepLint(where=where, action=contract.action, expectation=label)
    try:
        good = _good_pair(contract, pre_read)
        if good is None:
            why = (
                f"no made-up reading passes {label}, so the lint cannot tell what a bad write "
                "would read; check this step by hand (landed verify)"
            )
            return dataclasses.replace(step, problem=why)
        wrap = wrapper(contract.expect)
        scenarios = []
        for name, (before, after) in bad_writes(*good).items():
            judged = _outcome(contract, wrap(before), wrap(after), pre_read)
            scenarios.append(
                Scenario(
                    name=name,
                    before=shown(wrap(before)) if pre_read else None,
                    after=shown(wrap(after)),
                    outcome=judged.outcome.value,
                    message=judged.message,
                )
            )
    except Exception as exc:  # a judge that cannot take the reading: unjudged, never "caught"
        return dataclasses.replace(step, problem=f"the lint failed: {type(exc).__name__}: {exc}")
    return dataclasses.replace(step, scenarios=tuple(scenarios))


def lint_plan(contracts: Sequence[tuple[str, Contract]], *, pre_read: bool = True) -> PlanLint:
    """Lint each (where, contract): ``where`` names it in the report (proof_plan.0, line 3)."""
    steps = tuple(lint_contract(c, where=where, pre_read=pre_read) for where, c in contracts)
    return PlanLint(steps=steps, pre_read=pre_read)


def lint_json(plan: PlanLint) -> dict[str, Any]:
    """The lint as the ``--json`` report."""
    return {
        "pre_read": plan.pre_read,
        "calls_bad_write_done": plan.calls_bad_write_done,
        "unjudged": plan.unjudged,
        "steps": [
            {
                "where": step.where,
                "action": step.action,
                "expectation": step.expectation,
                "problem": step.problem,
                "caught": [s.name for s in step.scenarios if s.caught],
                "called_done": step.called_done,
                "scenarios": [dataclasses.asdict(s) for s in step.scenarios],
            }
            for step in plan.steps
        ],
    }
