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
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from landed.probes.contract import Contract, Observation, Outcome
from landed.probes.expect import Judgement, judge, judge_with_before, label_for
from landed.probes.jsonpath import parse_path
from landed.probes.reading import Capture, Reading

__all__ = [
    "SCENARIOS",
    "PlanLint",
    "Scenario",
    "StepLint",
    "lint_contract",
    "lint_json",
    "lint_plan",
]

#: The bad writes every step is tried against, in report order.
SCENARIOS = (
    "nothing landed",
    "half",
    "double",
    "already there",
    "wrong value",
    "probe error",
    "undone after the act",
)


class _Nothing:
    def __repr__(self) -> str:
        return "nothing"


class _Error:
    def __repr__(self) -> str:
        return "probe error"


_NOTHING: Any = _Nothing()
_ERROR: Any = _Error()
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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _bump(value: Any) -> Any:
    """A present value other than ``value``: what a record held before the act, say."""
    if _is_number(value):
        return value + 2
    if isinstance(value, str) and value:
        return value[:-1] + ("x" if value[-1] != "x" else "y")
    return "landed-lint-other"


def _half(before: Any, after: Any) -> Any:
    if _is_number(after):
        base = before if _is_number(before) else 0
        delta = after - base
        return base + (int(delta / 2) if isinstance(delta, int) else delta / 2)
    if isinstance(after, str):
        return after[: len(after) // 2]
    if isinstance(after, list):
        return after[: len(after) // 2]
    if isinstance(after, dict):
        return dict(list(after.items())[: len(after) // 2])
    return _NOTHING


def _double(before: Any, after: Any) -> Any:
    if _is_number(after):
        base = before if _is_number(before) else 0
        return base + 2 * (after - base)
    if isinstance(after, str):
        return after + after
    if isinstance(after, list):
        return [*after, *after]
    if isinstance(after, dict):
        return {**after, **{f"{k}_again": v for k, v in after.items()}}
    return [after, after]


def _wrong(before: Any, after: Any) -> Any:
    if _is_number(after):
        return after - 1 if after - 1 != before else after + 1
    if isinstance(after, bool):
        return not after
    return _bump(after)


def _reading(kind: str, leaf: Any) -> Reading:
    """What a probe of ``kind`` returns when the system of record holds ``leaf``."""
    if kind == "record":
        if leaf is _NOTHING:
            reading = Reading.of_json([])
            reading.number, reading.value = 0, []
            return reading
        reading = Reading.of_json([{"value": leaf}])
        reading.value = leaf
        reading.number = leaf if _is_number(leaf) else 1
        reading.auto_cell = _is_number(leaf)
        return reading
    if leaf is _NOTHING:
        return Reading(capture=Capture.of(b""), missing=True)
    if isinstance(leaf, str):
        return Reading(capture=Capture.of(leaf.encode()))
    if _is_number(leaf):
        return Reading(capture=Capture.of(json.dumps(leaf).encode()))
    return Reading.of_json(leaf)


def _judged(expect: Any, kind: str, leaf: Any) -> Judgement:
    if leaf is _ERROR:
        return Judgement(Outcome.PROBE_ERROR, "the probe observed nothing (made up by the lint)")
    return judge(expect, _reading(kind, leaf), probe_kind=kind)


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


def _plain_regex(pattern: str) -> str:
    """Text a simple pattern matches (anchors dropped, common classes filled in)."""
    text = pattern.removeprefix("^").removesuffix("$")
    text = re.sub(r"\\d[+*]?|\[0-9\][+*]?", "1", text)
    text = re.sub(r"\\w[+*]?|\.[+*]?", "a", text)
    return re.sub(r"\\(.)", r"\1", text)


def _wrapper(expect: Any) -> Callable[[Any], Any]:
    """How a leaf value sits in what the probe returns: at the expectation's path, if any."""
    path = getattr(expect, "path", None)
    if not isinstance(path, str):
        return lambda leaf: leaf
    steps = parse_path(path)

    def wrap(leaf: Any) -> Any:
        if leaf is _NOTHING or leaf is _ERROR:
            return leaf
        for step in reversed(steps):
            if isinstance(step, int):
                leaf = [None] * step + [leaf] if step >= 0 else [leaf]
            else:
                leaf = {step: leaf}
        return leaf

    return wrap


def _candidates(expect: Any) -> list[Any]:
    """After values the act's write might leave, tried in turn for one the plan passes."""
    value: Any = getattr(expect, "value", None)
    leaves: list[Any] = []
    if _is_number(value):
        leaves += [value, value + 1, value - 1]
    elif isinstance(value, str):
        leaves += [value, _plain_regex(value)]
    elif value is not None:
        leaves.append(value)
    if value is not None:
        leaves.append([value])
    return [*leaves, "landed", 1, True]


def _good_pair(contract: Contract, pre_read: bool) -> tuple[Any, Any, Any] | None:
    """(before, after, other before): a write this plan calls done, or None if none is found."""
    wrap = _wrapper(contract.expect)
    for after in _candidates(contract.expect):
        befores = [_NOTHING, _bump(after)]
        for i, before in enumerate(befores):
            judged = _outcome(contract, wrap(before), wrap(after), pre_read)
            if judged.outcome is Outcome.PASS:
                return before, after, befores[1 - i]
    return None


def _pairs(before: Any, after: Any, other: Any) -> dict[str, tuple[Any, Any]]:
    return {
        "nothing landed": (before, before),
        "half": (before, _half(before, after)),
        "double": (before, _double(before, after)),
        "already there": (after, after),
        "wrong value": (before, _wrong(before, after)),
        "probe error": (before, _ERROR),
        "undone after the act": (other, other),
    }


def _shown(leaf: Any) -> str:
    if leaf is _NOTHING or leaf is _ERROR:
        return repr(leaf)
    text = json.dumps(leaf, default=str)
    return text if len(text) <= 60 else text[:60] + "..."


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
        wrap = _wrapper(contract.expect)
        scenarios = []
        for name, (before, after) in _pairs(*good).items():
            judged = _outcome(contract, wrap(before), wrap(after), pre_read)
            scenarios.append(
                Scenario(
                    name=name,
                    before=_shown(wrap(before)) if pre_read else None,
                    after=_shown(wrap(after)),
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
