"""What a claim contract must hold before the runner judges claims by it (run at load).

A claim comes with no before-state (the act happened before landed heard of it), so the plan
lint's own "already there" and "undone after the act" writes cannot be told apart from the
good write by any expectation. What a contract has instead: its probes are keyed to the claim's
parameters, so a count or a record that was there regardless of the claim (a constant, a total,
a row of other work) does not answer for it. A contract is refused when:

- a step's probe uses none of the parameters (constant: ``SELECT 1``, ``count(*)`` of a table);
- a declared parameter is used nowhere (the claim's value for it would be checked by nothing);
- a reference stands where it would be code (SQL text, a command, a source name);
- a bad write the lint makes up (nothing landed, half, double, wrong value, probe error) passes
  a step, or the lint cannot judge a step at all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from landed.probes.contract import Contract
from landed.probes.lint import lint_plan
from landed.task.claim_contracts import (
    _PARAM_NAME,
    CLASS_NAME,
    MAX_CONTRACTS_BYTES,
    ClaimContract,
    ClaimContracts,
    ContractsError,
    ParamValue,
    read_claim_contracts,
    substitute,
)
from landed.util.strictjson import TooLarge, read_at_most

__all__ = [
    "NEEDS_BEFORE_STATE",
    "lint_claim_contracts",
    "load_claim_contracts",
    "parse_claim_contracts",
]

#: Lint writes only a before-state tells from the good one: covered by the keying rule instead.
NEEDS_BEFORE_STATE: Final = frozenset({"already there", "undone after the act"})
#: Probe fields a parameter may fill as a whole value (bound parameters, ids, expected fields).
_VALUE_FIELDS: Final = frozenset(
    {"params", "object_id", "payment_id", "message_id", "call_id", "amount", "currency"}
    | {"status", "version", "sha256", "size", "ref"}
)
#: Probe fields a parameter may fill inside a template, percent-encoded.
_TEMPLATE_FIELDS: Final = frozenset({"url", "path"})
_SAMPLE: Final[dict[str, ParamValue]] = {
    "string": "landed-lint-a",
    "integer": 3,
    "number": 3.5,
    "boolean": True,
}
_PLAN = TypeAdapter(list[Contract])


def load_claim_contracts(path: Path) -> ClaimContracts:
    """Read (bounded), validate and lint a contracts file; ContractsError names what is wrong."""
    try:
        data = read_at_most(path, MAX_CONTRACTS_BYTES, f"the claim contracts file {path}")
    except (TooLarge, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ContractsError(f"cannot read the claim contracts file {path}: {why}") from None
    return parse_claim_contracts(data, str(path))


def parse_claim_contracts(data: bytes, where: str) -> ClaimContracts:
    """The contracts ``data`` holds, once every one of them passes the lint."""
    found = read_claim_contracts(data, where)
    lint_claim_contracts(found, where)
    return found


def lint_claim_contracts(contracts: ClaimContracts, where: str) -> None:
    """ContractsError naming each contract a bad write would fool, and the write."""
    problems: list[str] = []
    for name, contract in contracts.contracts.items():
        problems += [f"claim contract {name!r}: {p}" for p in _problems(name, contract)]
    if problems:
        raise ContractsError(f"{where}: " + "; ".join(problems[:10]))


def _problems(name: str, contract: ClaimContract) -> list[str]:
    if not CLASS_NAME.match(name):
        return ["the class name must be dotted lower-case words (orders.created); rename it"]
    bad = [p for p in contract.params if not _PARAM_NAME.match(p)]
    if bad:
        return [f"parameter name {bad[0]!r} must be a letter or _ then letters, digits, _"]
    problems: list[str] = []
    used: set[str] = set()
    for i, step in enumerate(contract.proof_plan):
        refs: list[tuple[str, str]] = []
        problems += [f"proof_plan.{i}.{p}" for p in _refs(step, (), refs)]
        problems += [
            f"proof_plan.{i}: {at} names {p!r}, which is not a declared parameter"
            for at, p in refs
            if p not in contract.params
        ]
        used |= {p for _, p in refs}
        if not any(at.startswith("probe.") for at, _ in refs):
            problems.append(
                f"proof_plan.{i}: a constant write passes it: its probe uses none of the "
                "parameters, so its answer does not depend on the claim (a count or a row "
                "already there passes it); key the probe to a parameter, e.g. "
                '"params": [{"param": "batch"}]'
            )
    unused = sorted(set(contract.params) - used)
    if unused:
        problems.append(
            f"parameter {unused[0]!r} is used by no step, so any value a claim gives for it "
            "passes; use it, or drop it"
        )
    return problems or _lint(contract)


def _refs(node: Any, at: tuple[str, ...], out: list[tuple[str, str]]) -> list[str]:
    """Collect (where, parameter) of every reference; problems where one may not stand."""
    where = ".".join(at)
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _refs(v, (*at, str(i)), out)]
    if not isinstance(node, dict):
        return []
    if set(node) == {"param"}:
        out.append((where, str(node["param"])))
        ok = (at[:1] == ("expect",) and at[1:2] != ("type",)) or (
            at[:1] == ("probe",) and len(at) > 1 and at[1] in _VALUE_FIELDS
        )
        return (
            []
            if ok
            else [
                f"{where}: a parameter may not stand here (only in probe "
                f"{', '.join(sorted(_VALUE_FIELDS))} or expect); move it"
            ]
        )
    if set(node) == {"template"}:
        names = re.findall(r"\{(\w+)\}", str(node["template"]))
        out += [(where, n) for n in names]
        if len(at) == 2 and at[0] == "probe" and at[1] in _TEMPLATE_FIELDS and names:
            return []
        return [f"{where}: a template stands only in probe url or path, with a {{name}}"]
    return [p for k, v in node.items() for p in _refs(v, (*at, str(k)), out)]


def _lint(contract: ClaimContract) -> list[str]:
    """The plan lint on the contract with sample values: every bad write it can judge caught."""
    sample = {k: _SAMPLE[t] for k, t in contract.params.items()}
    try:
        plan = _PLAN.validate_python(substitute(contract.proof_plan, sample))
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = "proof_plan." + ".".join(str(p) for p in first["loc"])
        return [f"{field}: {first['msg']}; fix the step"]
    linted = lint_plan([(f"proof_plan.{i}", c) for i, c in enumerate(plan)], pre_read=False)
    problems = []
    for step in linted.steps:
        if step.problem is not None:
            problems.append(f"{step.where}: {step.problem}")
            continue
        fooled = [s for s in step.scenarios if not s.caught and s.name not in NEEDS_BEFORE_STATE]
        problems += [
            f"{step.where} ({step.expectation}): a bad write passes it: {s.name} (reads "
            f"{s.after}); tighten its expectation (see `landed plan lint`)"
            for s in fooled
        ]
    return problems
