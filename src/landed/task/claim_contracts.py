"""The operator's claim contracts: one proof plan per outcome class, with declared parameters.

A claim from an agent outside Temporal names an outcome class and its parameters
(``{"outcome": "orders.created", "params": {"batch": "b-17", "count": 3}}``). The runner holds
the contracts (``LANDED_RUNNER_CLAIM_CONTRACTS``; never the claim line, which the claimant
writes) and turns the class into the plan the verifier reads: the check is the operator's, the
claimant chooses only the values. A value stands where a plan says ``{"param": NAME}`` (a whole
JSON value: a bound SQL parameter, an expected value, an id) or in a ``{"template": ...}`` URL or
path, percent-encoded; never in SQL text, a command or a source name.

File format (JSON)::

    {"contracts": {"orders.created": {
        "params": {"batch": "string", "count": "integer"},
        "outcome": "{count} order lines of batch {batch} are in the orders table",
        "proof_plan": [{"action": "insert the order lines",
                        "probe": {"kind": "record", "source": "shop-db",
                                  "query": "select count(*) from orders where batch = ?",
                                  "params": [{"param": "batch"}]},
                        "expect": {"type": "count", "value": {"param": "count"}}}]}}}
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any, Final, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from landed.probes.contract import Contract
from landed.util.strictjson import DuplicateKey, loads

__all__ = [
    "CLASS_NAME",
    "MAX_CONTRACTS_BYTES",
    "ClaimContract",
    "ClaimContracts",
    "ClaimOutcome",
    "ClaimRefused",
    "ContractsError",
    "ParamValue",
    "ResolvedClaim",
    "judge_claim",
    "read_claim_contracts",
    "resolve",
    "substitute",
]

MAX_CONTRACTS_BYTES: Final = 1 << 20
#: An outcome class: dotted lower-case words (``orders.created``).
CLASS_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_TEXT = 500

ParamType = Literal["string", "integer", "number", "boolean"]
ParamValue = str | int | float | bool
_PLAN = TypeAdapter(list[Contract])


class ContractsError(ValueError):
    """The contracts file cannot be used; the message names the contract and the fix."""


class ClaimRefused(ValueError):
    """A claim the contracts cannot judge (unknown class, missing or mistyped parameter)."""


class ClaimContract(BaseModel):
    """One outcome class: its parameters, its outcome's words, its plan with references."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params: dict[str, ParamType] = Field(min_length=1)
    outcome: str = Field(default="", max_length=1000)
    proof_plan: list[dict[str, Any]] = Field(min_length=1, max_length=50)


class ClaimContracts(BaseModel):
    """The operator's contracts, keyed by outcome class, and the sha256 of the file's bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contracts: dict[str, ClaimContract]
    sha256: str = ""


class ClaimOutcome(BaseModel):
    """What a claim names for the runner to judge: a class, its values, the file it expects."""

    model_config = ConfigDict(frozen=True)

    outcome_class: str
    params: dict[str, ParamValue] = Field(default_factory=dict)
    contracts_sha256: str | None = None


class ResolvedClaim(BaseModel):
    """The runner's answer: the operator's plan with the claim's values, or why there is none."""

    model_config = ConfigDict(frozen=True)

    outcome: str = ""
    proof_plan: list[Contract] = Field(default_factory=list)
    contracts_sha256: str | None = None
    refused: str | None = None


def judge_claim(contracts: ClaimContracts | None, claim: ClaimOutcome) -> ResolvedClaim:
    """The runner's one decision for a claim by outcome class (fail closed: refused, no plan)."""
    held = contracts.sha256 if contracts is not None else None
    pinned = claim.contracts_sha256
    if pinned is not None and pinned != held:
        why = (
            f"the claim was checked against claim contracts sha256 {pinned[:12]}, but the runner "
            f"holds {held[:12] if held else 'none'}; give the runner the same file "
            "(LANDED_RUNNER_CLAIM_CONTRACTS) that `landed reconcile --contracts` was given"
        )
        return ResolvedClaim(contracts_sha256=held, refused=why)
    try:
        outcome, plan = resolve(contracts, claim.outcome_class, dict(claim.params))
    except ClaimRefused as exc:
        return ResolvedClaim(contracts_sha256=held, refused=str(exc))
    return ResolvedClaim(outcome=outcome, proof_plan=plan, contracts_sha256=held)


def read_claim_contracts(data: bytes, where: str) -> ClaimContracts:
    """The contracts a file holds, validated but not yet linted (``claim_contracts_lint``
    loads them for use: validated, then linted)."""
    try:
        value = loads(data)
    except (DuplicateKey, ValueError, RecursionError) as exc:
        raise ContractsError(f"{where}: not valid JSON ({exc}); fix the file") from None
    if not isinstance(value, dict) or not isinstance(value.get("contracts"), dict):
        raise ContractsError(f'{where}: expected {{"contracts": {{"<outcome class>": {{...}}}}}}')
    try:
        return ClaimContracts.model_validate({**value, "sha256": hashlib.sha256(data).hexdigest()})
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ContractsError(f"{where}: {field}: {first['msg']}; fix the contract") from None


def resolve(
    contracts: ClaimContracts | None, outcome_class: str, params: dict[str, ParamValue]
) -> tuple[str, list[Contract]]:
    """The outcome's words and the plan the operator declared for this class, with the claim's
    values in place; ClaimRefused (never a plan) when the class or a value cannot be used."""
    if contracts is None:
        raise ClaimRefused(
            f"outcome class {outcome_class!r}: the runner holds no claim contracts; the operator "
            "sets LANDED_RUNNER_CLAIM_CONTRACTS to their contracts file"
        )
    contract = contracts.contracts.get(outcome_class)
    if contract is None:
        known = ", ".join(sorted(contracts.contracts)[:20]) or "none"
        raise ClaimRefused(
            f"outcome class {outcome_class!r} is not in the operator's claim contracts (sha256 "
            f"{contracts.sha256[:12]}; declared: {known}); name a declared class, or have the "
            "operator declare this one"
        )
    values = check_params(outcome_class, contract, params)
    plan = _PLAN.validate_python(substitute(contract.proof_plan, values))
    words = re.sub(r"\{(\w+)\}", lambda m: str(values.get(m[1], m[0])), contract.outcome)
    return words or f"{outcome_class} {values}", plan


def check_params(
    name: str, contract: ClaimContract, params: dict[str, ParamValue]
) -> dict[str, ParamValue]:
    """Every declared parameter, of its declared type, and no other."""
    extra = sorted(set(params) - set(contract.params))
    if extra:
        raise ClaimRefused(f"outcome class {name!r} declares no parameter {extra[0]!r}; drop it")
    for key, kind in contract.params.items():
        if key not in params:
            raise ClaimRefused(
                f"outcome class {name!r} needs the parameter {key!r} ({kind}); add it to params"
            )
        if not _typed(kind, params[key]):
            raise ClaimRefused(
                f"outcome class {name!r}: parameter {key!r} must be {_article(kind)} {kind} "
                f"(at most {_MAX_TEXT} characters for a string), not {params[key]!r}; fix it"
            )
    return dict(params)


def substitute(node: Any, values: dict[str, ParamValue]) -> Any:
    """The plan with each reference replaced by its value, as a value (never spliced into code)."""
    if isinstance(node, dict):
        if set(node) == {"param"}:
            return values[node["param"]]
        if set(node) == {"template"}:
            text = node["template"]
            return re.sub(r"\{(\w+)\}", lambda m: quote(str(values[m[1]]), safe=""), text)
        return {k: substitute(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute(v, values) for v in node]
    return node


def _typed(kind: ParamType, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str) and 0 < len(value) <= _MAX_TEXT
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "integer":
        return isinstance(value, int)
    return math.isfinite(value)


def _article(kind: str) -> str:
    return "an" if kind == "integer" else "a"
