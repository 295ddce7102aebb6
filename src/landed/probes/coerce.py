"""Turn what a caller hands in into a probe or expectation model, refusing anything else."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from landed.probes.contract import (
    AtLeast,
    CallLogProbe,
    Change,
    CommandProbe,
    Contains,
    Contract,
    Count,
    DeploymentProbe,
    Equals,
    Expectation,
    FileProbe,
    GitProbe,
    HttpProbe,
    JsonPath,
    NonEmpty,
    PaymentProbe,
    Probe,
    ProviderObjectProbe,
    RecordProbe,
    Regex,
    RungAtLeast,
    SentLogProbe,
)
from landed.probes.verdict import InvalidContract

__all__ = ["coerce_contract", "coerce_expectation", "coerce_probe", "describe_error"]

_PROBE: TypeAdapter[Any] = TypeAdapter(Probe)
_EXPECT: TypeAdapter[Any] = TypeAdapter(Expectation)

# Instances of these are already validated (frozen models): no need to validate them again.
_PROBE_MODELS = (
    RecordProbe,
    HttpProbe,
    ProviderObjectProbe,
    PaymentProbe,
    DeploymentProbe,
    SentLogProbe,
    CallLogProbe,
    FileProbe,
    CommandProbe,
    GitProbe,
)
_EXPECT_MODELS = (Count, AtLeast, Change, Contains, Equals, Regex, JsonPath, RungAtLeast, NonEmpty)

_EXPECT_TYPES = (
    "count, at_least, change, contains, equals, regex, json_path, rung_at_least, non_empty"
)
_PROBE_KINDS = (
    "record, http, provider_object, payment, deployment, sent_log, call_log, file, command, git"
)


def describe_error(exc: ValidationError) -> str:
    """One line per problem, naming the field and, for a bad tag, the accepted values."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(top)"
        if err["type"] == "union_tag_invalid":
            tag = err.get("ctx", {}).get("tag")
            if "type" in str(err.get("ctx", {}).get("discriminator", "")):
                lines.append(
                    f"{where}: unknown expectation type {tag!r}; use one of {_EXPECT_TYPES}"
                )
            else:
                lines.append(f"{where}: unknown probe kind {tag!r}; use one of {_PROBE_KINDS}")
        elif err["type"] == "union_tag_not_found":
            disc = str(err.get("ctx", {}).get("discriminator", ""))
            if "type" in disc:
                lines.append(f"{where}: the expectation has no 'type'; use one of {_EXPECT_TYPES}")
            else:
                lines.append(f"{where}: the probe has no 'kind'; use one of {_PROBE_KINDS}")
        elif err["type"] == "missing" and err["loc"] in (("expect",), ()):
            lines.append(f"{where}: missing; state what must be seen ({_EXPECT_TYPES})")
        elif err["type"] == "missing" and err["loc"] == ("probe",):
            lines.append(f"{where}: missing; give the probe that reads the result back")
        else:
            lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def _reject_code(value: Any, what: str) -> None:
    if callable(value) and not isinstance(value, (BaseModel, Mapping, type)):
        raise InvalidContract(
            f"{what} must be data (a dict or a landed model), not a callable: a function can "
            "hand back the action's own return value without reading the system of record, so "
            "landed only accepts probes it runs itself"
        )


def _coerce(value: Any, models: Any, adapter: Any, what: str, missing: str, shape: str) -> Any:
    """A model of ``models`` as it is, or one validated from a mapping; else InvalidContract.
    ``shape`` is the message for a value of another type, with ``{type}`` for its type name."""
    if type(value) in models:
        return value
    _reject_code(value, what)
    if value is None:
        raise InvalidContract(missing)
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, Mapping):
        raise InvalidContract(shape.format(type=type(value).__name__))
    try:
        return adapter.validate_python(dict(value))
    except ValidationError as exc:
        raise InvalidContract(f"invalid {what.partition(' ')[2]}: {describe_error(exc)}") from None


def coerce_probe(value: Any) -> Any:
    """A probe model from a model or a mapping; anything else is an InvalidContract."""
    return _coerce(
        value,
        _PROBE_MODELS,
        _PROBE,
        "a probe",
        "no probe given: a claim needs a probe that reads the result back",
        "a probe must be a mapping with a 'kind' or a landed probe model, not {type}: a value "
        "handed in beside the claim is not a reading",
    )


def coerce_expectation(value: Any) -> Any:
    """An expectation model; a missing or unknown one is an InvalidContract, never a default."""
    return _coerce(
        value,
        _EXPECT_MODELS,
        _EXPECT,
        "an expectation",
        "no expectation given: state what must be seen (for the weak default, say "
        "{'type': 'non_empty'} explicitly)",
        "an expectation must be a mapping with a 'type' or a landed expectation model, not {type}",
    )


def coerce_contract(value: Any) -> Contract:
    if isinstance(value, Contract):
        return value
    try:
        return Contract.model_validate(value)
    except ValidationError as exc:
        raise InvalidContract(f"invalid contract: {describe_error(exc)}") from None
