"""Probes, expectations and observations: the data shapes of a read-back, declared before work."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from landed.probes.jsonpath import JsonPathError, parse_path
from landed.receipts.ladder import CALL_LADDER, MESSAGE_LADDER

__all__ = [
    "AtLeast",
    "CallLogProbe",
    "Change",
    "CommandProbe",
    "Contains",
    "Contract",
    "Count",
    "DeploymentProbe",
    "Equals",
    "Evidence",
    "Expectation",
    "FileProbe",
    "GitProbe",
    "HttpProbe",
    "JsonPath",
    "NonEmpty",
    "Observation",
    "Outcome",
    "PaymentProbe",
    "Probe",
    "ProviderObjectProbe",
    "RecordProbe",
    "Regex",
    "RungAtLeast",
    "SentLogProbe",
    "probe_digest",
    "probe_problem",
    "source_problem",
]


class _Shape(BaseModel):
    """Strict, frozen data: an unknown field in a probe or expectation is an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- probes ------------------------------------------------------------------------------------


class RecordProbe(_Shape):
    """A SQL query on a named database source, run in a read-only transaction."""

    kind: Literal["record"] = "record"
    source: str
    query: str
    params: list[Any] | dict[str, Any] = Field(default_factory=list)
    measure: Literal["auto", "rows", "value"] = Field(
        default="auto",
        description=(
            "What count/at_least compare: 'value' is the single cell of a one-row, one-column "
            "result (select count(*) ...), 'rows' the number of rows, 'auto' the cell when the "
            "result is one numeric cell and the number of rows otherwise."
        ),
    )
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class HttpProbe(_Shape):
    """GET a URL relative to a source's base (absolute only where the source allows it)."""

    kind: Literal["http"] = "http"
    source: str | None = None
    url: str
    status: int | None = Field(default=200, description="Expected HTTP status; None accepts any.")
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class ProviderObjectProbe(_Shape):
    """GET one JSON object by id from a provider API source."""

    kind: Literal["provider_object"] = "provider_object"
    source: str
    path: str = Field(description="Path under the source's base, e.g. /v1/objects/{id}.")
    object_id: str
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class PaymentProbe(_Shape):
    """A payment object at a provider, with typed fields to compare."""

    kind: Literal["payment"] = "payment"
    source: str
    payment_id: str
    path: str = Field(default="/payments/{id}", description="Path under the source's base.")
    amount: int | float | None = None
    currency: str | None = None
    status: str | None = None
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class DeploymentProbe(_Shape):
    """What a deployment serves: a version string or a content hash read from the live target."""

    kind: Literal["deployment"] = "deployment"
    source: str
    path: str = "/"
    version: str | None = None
    sha256: str | None = None
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class SentLogProbe(_Shape):
    """Find a message by id in a provider's sent log; its status sits on the message ladder."""

    kind: Literal["sent_log"] = "sent_log"
    source: str
    message_id: str
    path: str = Field(default="/messages/{id}", description="Path under the source's base.")
    status_field: str = "status"
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class CallLogProbe(_Shape):
    """Find a call by id in a carrier's call log; its status sits on the call ladder."""

    kind: Literal["call_log"] = "call_log"
    source: str
    call_id: str
    path: str = Field(default="/calls/{id}", description="Path under the source's base.")
    status_field: str = "status"
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class FileProbe(_Shape):
    """A file under a source's root: existence, size, sha256, content."""

    kind: Literal["file"] = "file"
    source: str | None = None
    path: str
    size: int | None = Field(default=None, ge=0, description="Claimed size in bytes.")
    sha256: str | None = Field(default=None, description="Claimed sha256 of the whole file.")
    max_bytes: int | None = Field(
        default=None, gt=0, description="Read at most this much content for matching."
    )
    timeout_s: float = Field(default=30.0, gt=0, le=3600)


class CommandProbe(_Shape):
    """Run argv (no shell unless ``shell`` is true) with a timeout and a scrubbed environment."""

    kind: Literal["command"] = "command"
    source: str | None = None
    argv: list[str] = Field(min_length=1)
    shell: bool = False
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    ok_exit_codes: list[int] = Field(
        default_factory=lambda: [0],
        description="Exit codes that mean the command read something (grep -c exits 1 on 0).",
    )

    @model_validator(mode="after")
    def _shell_takes_one_string(self) -> CommandProbe:
        if self.shell and len(self.argv) != 1:
            raise ValueError(
                "with shell: true, argv must hold exactly one string (the shell command line)"
            )
        return self


class GitProbe(_Shape):
    """A commit or ref exists in a repository source, or a pull-request URL resolves."""

    kind: Literal["git"] = "git"
    source: str | None = None
    ref: str | None = None
    pull_request_url: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _one_target(self) -> GitProbe:
        if (self.ref is None) == (self.pull_request_url is None):
            raise ValueError("a git probe names exactly one of ref or pull_request_url")
        return self


Probe = Annotated[
    RecordProbe
    | HttpProbe
    | ProviderObjectProbe
    | PaymentProbe
    | DeploymentProbe
    | SentLogProbe
    | CallLogProbe
    | FileProbe
    | CommandProbe
    | GitProbe,
    Field(discriminator="kind"),
]

# --- expectations ------------------------------------------------------------------------------


# A source is named, never located: the verifier resolves the name from its own configuration,
# so a task cannot point the check at a server (or a credential) its author controls.
_SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def source_problem(source: str | None) -> str | None:
    """Why ``source`` is not a source name (a URL, DSN or path), or None. The value itself is
    never quoted: a DSN given here may carry a password."""
    if source is None or _SOURCE_NAME.fullmatch(source):
        return None
    shape = "a URL or DSN" if "://" in source or "@" in source else "not a name"
    return (
        f"source is {shape} (not shown: it may hold a credential); a task names a source the "
        "verifier configures, e.g. 'orders-db' (letters, digits, '.', '_' and '-', at most 64): "
        "configure the connection on the verifier (LANDED_SOURCES__NAME__URL or landed.toml) "
        "and name it here"
    )


def probe_problem(probe: Any) -> str | None:
    """Why ``probe`` cannot be read as it is given, or None. Checked at submit and before each
    read, not when a model is built: a stored task (a workflow's input) must still load."""
    kind = getattr(probe, "kind", None)
    source = getattr(probe, "source", None)
    if (why := source_problem(source if isinstance(source, str) else None)) is not None:
        return why
    texts: list[tuple[str, str]] = []
    if kind == "file":
        texts.append(("path", probe.path))
    elif kind == "command":
        texts += [("argv", arg) for arg in probe.argv]
        if probe.cwd is not None:
            texts.append(("cwd", probe.cwd))
        for name, value in probe.env.items():
            if not name or "=" in name:
                return f"env name {name!r} is not a variable name: give it without '='"
            texts += [("env name", name), (f"env {name}", value)]
    elif kind == "git" and probe.ref is not None:
        texts.append(("ref", probe.ref))
        if probe.ref.startswith(":") and not probe.ref.startswith(":/"):
            return (
                f"git ref {probe.ref!r} names a file in the index, not a commit; name a commit "
                "sha, a branch, a tag or a ref expression"
            )
    elif kind in ("provider_object", "payment", "sent_log", "call_log") and (
        "{id}" not in probe.path.split("?", 1)[0]
    ):
        # The object read must be the one named: a path with no {id} (or with it only in the
        # query, which a server may ignore) reads some other object under the id's name.
        return (
            f"path {probe.path!r} must hold {{id}} in its path part (e.g. /payments/{{id}}): "
            "the object read is then the one the probe names"
        )
    for what, text in texts:
        if "\x00" in text:
            # The OS cannot take a NUL in a path, an argument or the environment.
            return f"the {kind} probe's {what} holds a NUL character; remove it"
    return None


def _reject_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    return value


class Count(_Shape):
    """Exactly n, in the value read (a count above n is ``duplicated``, below ``mismatch``)."""

    type: Literal["count"] = "count"
    value: int = Field(ge=0)

    @field_validator("value", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        return _reject_bool(value)


class AtLeast(_Shape):
    type: Literal["at_least"] = "at_least"
    value: int | float = Field(allow_inf_nan=False)

    @field_validator("value", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        return _reject_bool(value)


class Change(_Shape):
    """The value read moved by exactly this much from the before-reading (+45: 45 inserted,
    -3: 3 deleted). Judged only against a before-reading; without one it is never a pass."""

    type: Literal["change"] = "change"
    value: int

    @field_validator("value", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        return _reject_bool(value)

    @field_validator("value")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            # "Nothing changed" holds whenever the act did nothing at all: it proves no outcome.
            raise ValueError(
                "a change of 0 proves nothing landed; give the signed change the action makes "
                "(+45 inserted, -3 deleted), or expect count/equals for a state"
            )
        return value


class Contains(_Shape):
    type: Literal["contains"] = "contains"
    value: str = Field(min_length=1)


class Equals(_Shape):
    type: Literal["equals"] = "equals"
    value: Any


class Regex(_Shape):
    type: Literal["regex"] = "regex"
    value: str = Field(min_length=1)

    @field_validator("value")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the regex does not compile: {exc}") from None
        return value


class JsonPath(_Shape):
    type: Literal["json_path"] = "json_path"
    path: str = Field(min_length=1)
    op: Literal["==", "!=", ">=", "<=", ">", "<", "contains", "exists"] = "=="
    value: Any = None

    @field_validator("path")
    @classmethod
    def _parses(cls, value: str) -> str:
        try:
            parse_path(value)
        except JsonPathError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _exists_takes_a_boolean(self) -> JsonPath:
        # "exists" with "true" or 1 must not quietly read as "is absent": only a JSON boolean
        # (or no value, meaning true) says which.
        if self.op == "exists" and self.value is not None and not isinstance(self.value, bool):
            raise ValueError(
                f"json_path op 'exists' takes value true or false (or none, meaning true), "
                f"not {self.value!r}"
            )
        return self


class RungAtLeast(_Shape):
    """The observed outbound status is at or above this rung of its ladder."""

    type: Literal["rung_at_least"] = "rung_at_least"
    value: str

    @field_validator("value")
    @classmethod
    def _on_a_ladder(cls, value: str) -> str:
        rung = value.strip().lower()
        if rung not in MESSAGE_LADDER and rung not in CALL_LADDER:
            raise ValueError(
                f"{value!r} is not a rung; use one of {', '.join(MESSAGE_LADDER)} (messages) "
                f"or {', '.join(CALL_LADDER)} (calls)"
            )
        return rung


class NonEmpty(_Shape):
    """The weak default: any non-empty output passes. Always labelled weak."""

    type: Literal["non_empty"] = "non_empty"


Expectation = Annotated[
    Count | AtLeast | Change | Contains | Equals | Regex | JsonPath | RungAtLeast | NonEmpty,
    Field(discriminator="type"),
]


class Contract(_Shape):
    """A completion contract: what was done, how to read it back, and what must be seen."""

    action: str = Field(min_length=1)
    probe: Probe
    expect: Expectation
    # Durability (landed.task.durability): the task's default when None.
    confirm_after: timedelta | None = Field(
        default=None,
        description="Quiet interval before the confirmation read of a passing reading; a "
        "reading that changes between the two is not done. None: the task's durability default.",
    )
    settle_window: timedelta | None = Field(
        default=None,
        description="How long after the act this outcome may take to become visible (replica "
        "lag, a queue): within it, empty and mismatch are read again with backoff.",
    )

    @field_validator("confirm_after", "settle_window")
    @classmethod
    def _durations(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and not timedelta(0) <= value <= timedelta(hours=1):
            raise ValueError(
                "confirm_after and settle_window must be between 0 and 1 hour; give seconds or "
                "an ISO 8601 duration such as PT2S"
            )
        return value


# --- observations ------------------------------------------------------------------------------


class Outcome(StrEnum):
    """What one probe reading showed. Only ``pass`` counts; ``probe-error`` saw nothing."""

    PASS = "pass"
    MISMATCH = "mismatch"
    EMPTY = "empty"
    PROBE_ERROR = "probe-error"
    VACUOUS = "vacuous"
    DUPLICATED = "duplicated"


class Evidence(BaseModel):
    """The raw output a probe returned, capped, with the digest and length of all of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    truncated: bool = False
    total_bytes: int
    sha256: str


class Observation(BaseModel):
    """One probe reading and its outcome against one expectation, by a named observer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: Outcome
    expectation: str = Field(description="Label such as count(45) or non_empty (weak default).")
    weak: bool = False
    kind: str
    source: str | None = None
    observer: str
    observed_at: datetime
    duration_ms: float
    evidence: Evidence | None = None
    value: Any = Field(default=None, description="The value compared (a count, a status, ...).")
    message: str = ""
    before_value: Any = Field(
        default=None, description="The value the before reading compared, when one was given."
    )
    probe_sha256: str | None = Field(
        default=None, description="sha256 of the probe's canonical JSON: what was read."
    )


def probe_digest(probe: BaseModel) -> str:
    """sha256 of the probe's JSON (fields in model order, compact): binds an observation to
    exactly what was run."""
    return hashlib.sha256(probe.model_dump_json().encode()).hexdigest()
