"""Checking a submitted task before anything runs: shape, size and what JSON would change."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
)
from pydantic_core import PydanticSerializationError, to_json

from landed.probes.contract import probe_problem
from landed.probes.expect import MEANING
from landed.task.spec import TaskSpec, TaskSpecError
from landed.util import strictjson

__all__ = [
    "MAX_SPEC_BYTES",
    "MAX_TASK_FILE_BYTES",
    "SubmitCheck",
    "check_spec",
]


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
#: The most ``landed submit`` reads of a task file: room for indentation around a task of
#: MAX_SPEC_BYTES; a longer file (or /dev/zero) is refused after this many bytes plus one.
MAX_TASK_FILE_BYTES = 4 * MAX_SPEC_BYTES


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


def check_spec(data: TaskSpec | Mapping[str, Any] | str | bytes) -> SubmitCheck:
    """Validate a task at submit; raise TaskSpecError naming each bad field and why."""
    built = data if isinstance(data, TaskSpec) else None
    # A built spec is re-validated: pydantic does not check assignments made after construction.
    source = _as_json(data) if isinstance(data, TaskSpec) else data
    raw = _read_document(source)
    _refuse_non_finite(raw)
    spec = _validate(raw)
    if built is not None or not (isinstance(source, str | bytes) or _plain(raw)):
        spec = _as_sent(spec, built)
    _refuse_bad_probes(spec)
    spec = _with_meaning(spec)
    _refuse_oversize(spec)
    return SubmitCheck(spec=spec, warnings=_warnings(spec))


def _with_meaning(spec: TaskSpec) -> TaskSpec:
    """The spec marked with the meaning it is judged under: the current one, always. Meaning 1
    is kept for runs and receipts from before it was marked, never taken for a new task."""
    if spec.expect_meaning not in (None, MEANING):
        raise TaskSpecError(
            [
                (
                    "expect_meaning",
                    f"{spec.expect_meaning} is not the meaning landed judges new tasks under "
                    f"({MEANING}: count, at_least and equals judge the value read); leave it out, "
                    "and where a step meant the change (count 45 of rows inserted) expect "
                    '{"type": "change", "value": 45} instead',
                )
            ]
        )
    return spec.model_copy(update={"expect_meaning": MEANING})


def _read_document(data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
    """The task as a dict, from JSON text or a mapping; anything else is a document error."""
    try:
        raw = strictjson.loads(data) if isinstance(data, str | bytes) else dict(data)
    except strictjson.DuplicateKey as exc:
        raise TaskSpecError([("(document)", str(exc))]) from None
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
    return raw


def _refuse_non_finite(raw: dict[str, Any]) -> None:
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
        pass  # judged by the model, where the field is named


def _validate(raw: dict[str, Any]) -> TaskSpec:
    try:
        return TaskSpec.model_validate(raw)
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


def _as_sent(spec: TaskSpec, built: TaskSpec | None) -> TaskSpec:
    """The spec as the act and the verifier will receive it, refused if JSON changes it."""
    # Values built in code reach the act and the verifier as JSON: a Decimal would arrive
    # as text, a set as a list, a datetime as text, an integer key as text. Refused here,
    # so what runs is what was submitted.
    sent = built if built is not None else spec
    again = spec if built is not None else TaskSpec.model_validate_json(_as_json(spec))
    change = _changed(sent.model_dump(), again.model_dump(), ())
    if change is not None:
        raise TaskSpecError([change])
    return again


def _refuse_bad_probes(spec: TaskSpec) -> None:
    problems = [
        (f"{field}.{i}.probe", why)
        for field, contracts in (("proof_plan", spec.proof_plan), ("frames", spec.frames))
        for i, contract in enumerate(contracts)
        if (why := probe_problem(contract.probe)) is not None
    ]
    if problems:
        raise TaskSpecError(problems)


def _refuse_oversize(spec: TaskSpec) -> None:
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


def _warnings(spec: TaskSpec) -> list[str]:
    """What a valid task may still get wrong: it can never be verified, or proves little."""
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
    if not spec.pre_read and any(c.expect.type == "change" for c in spec.proof_plan):
        warnings.append(
            "pre_read is false and the plan expects a change: a change is judged against the "
            "pre-read, so where the runner skips it the step is not done"
        )
    if spec.frames and not spec.pre_read:
        warnings.append(
            "pre_read is false and the plan declares frames: frames are read in the pre-read, "
            "so on a runner that honours pre_read: false no frame can be shown unchanged and "
            "the task is not done"
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
    return warnings


# --- what the act returns -----------------------------------------------------------------------
