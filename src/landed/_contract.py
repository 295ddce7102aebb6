"""Probes, expectations and observations: the data shapes of a read-back, declared before work."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AtLeast",
    "CallLogProbe",
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
    timeout_s: float = 10.0


class HttpProbe(_Shape):
    """GET a URL relative to a source's base (absolute only where the source allows it)."""

    kind: Literal["http"] = "http"
    source: str | None = None
    url: str
    status: int | None = Field(default=200, description="Expected HTTP status; None accepts any.")
    timeout_s: float = 10.0


class ProviderObjectProbe(_Shape):
    """GET one JSON object by id from a provider API source."""

    kind: Literal["provider_object"] = "provider_object"
    source: str
    path: str = Field(description="Path under the source's base, e.g. /v1/objects/{id}.")
    object_id: str
    timeout_s: float = 10.0


class PaymentProbe(_Shape):
    """A payment object at a provider, with typed fields to compare."""

    kind: Literal["payment"] = "payment"
    source: str
    payment_id: str
    amount: int | float | None = None
    currency: str | None = None
    status: str | None = None
    timeout_s: float = 10.0


class DeploymentProbe(_Shape):
    """What a deployment serves: a version string or a content hash read from the live target."""

    kind: Literal["deployment"] = "deployment"
    source: str
    path: str = "/"
    version: str | None = None
    sha256: str | None = None
    timeout_s: float = 10.0


class SentLogProbe(_Shape):
    """Find a message by id in a provider's sent log; its status sits on the message ladder."""

    kind: Literal["sent_log"] = "sent_log"
    source: str
    message_id: str
    timeout_s: float = 10.0


class CallLogProbe(_Shape):
    """Find a call by id in a carrier's call log; its status sits on the call ladder."""

    kind: Literal["call_log"] = "call_log"
    source: str
    call_id: str
    timeout_s: float = 10.0


class FileProbe(_Shape):
    """A file under a source's root: existence, size, sha256, content."""

    kind: Literal["file"] = "file"
    source: str | None = None
    path: str
    max_bytes: int | None = None


class CommandProbe(_Shape):
    """Run argv (no shell unless ``shell`` is true) with a timeout and a scrubbed environment."""

    kind: Literal["command"] = "command"
    source: str | None = None
    argv: list[str] = Field(min_length=1)
    shell: bool = False
    timeout_s: float = 30.0
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class GitProbe(_Shape):
    """A commit or ref exists in a repository source, or a pull-request URL resolves."""

    kind: Literal["git"] = "git"
    source: str | None = None
    ref: str | None = None
    pull_request_url: str | None = None
    timeout_s: float = 30.0


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


class Count(_Shape):
    """Exactly n (a count above n is ``duplicated``, below is ``mismatch``)."""

    type: Literal["count"] = "count"
    value: int = Field(ge=0)


class AtLeast(_Shape):
    type: Literal["at_least"] = "at_least"
    value: int | float


class Contains(_Shape):
    type: Literal["contains"] = "contains"
    value: str = Field(min_length=1)


class Equals(_Shape):
    type: Literal["equals"] = "equals"
    value: Any


class Regex(_Shape):
    type: Literal["regex"] = "regex"
    value: str = Field(min_length=1)


class JsonPath(_Shape):
    type: Literal["json_path"] = "json_path"
    path: str = Field(min_length=1)
    op: Literal["==", "!=", ">=", "<=", ">", "<", "contains", "exists"] = "=="
    value: Any = None


class RungAtLeast(_Shape):
    """The observed outbound status is at or above this rung of its ladder."""

    type: Literal["rung_at_least"] = "rung_at_least"
    value: str


class NonEmpty(_Shape):
    """The weak default: any non-empty output passes. Always labelled weak."""

    type: Literal["non_empty"] = "non_empty"


Expectation = Annotated[
    Count | AtLeast | Contains | Equals | Regex | JsonPath | RungAtLeast | NonEmpty,
    Field(discriminator="type"),
]


class Contract(_Shape):
    """A completion contract: what was done, how to read it back, and what must be seen."""

    action: str = Field(min_length=1)
    probe: Probe
    expect: Expectation


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
