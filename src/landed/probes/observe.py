"""``observe()``: run one probe against its source and judge what it returned."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from landed.probes.coerce import coerce_expectation, coerce_probe
from landed.probes.contract import (
    CallLogProbe,
    CommandProbe,
    DeploymentProbe,
    FileProbe,
    GitProbe,
    HttpProbe,
    Observation,
    Outcome,
    PaymentProbe,
    ProviderObjectProbe,
    RecordProbe,
    SentLogProbe,
    probe_digest,
    probe_problem,
)
from landed.probes.expect import (
    MEANING,
    Judgement,
    is_weak,
    judge,
    judge_with_before,
    label_for,
)
from landed.probes.http import read_deployment, read_http, read_object, read_outbound, read_payment
from landed.probes.local import read_command, read_file, read_git
from landed.probes.reading import (
    DEFAULT_READ_CAP,
    DEFAULT_READ_LIMIT,
    Capture,
    Limits,
    ProbeError,
    Reading,
    cut,
    make_evidence,
)
from landed.probes.settings import SourceConfig, SourceKind
from landed.probes.sources import SourceRegistry
from landed.probes.sql import read_record
from landed.probes.verdict import InvalidContract
from landed.util.redact import Redactor, escape_for_humans

__all__ = ["DEFAULT_EVIDENCE_CAP", "observe", "probe_digest"]

DEFAULT_EVIDENCE_CAP = 64 * 1024

log = logging.getLogger("landed.observe")

_Runner = Callable[[Any, Any, SourceRegistry, Limits], Awaitable[Reading]]

# Each probe kind: the source kinds it may name, and its runner.
_RUNNERS: dict[type, tuple[tuple[SourceKind, ...], _Runner]] = {
    RecordProbe: (("sql",), read_record),
    HttpProbe: (("http",), read_http),
    ProviderObjectProbe: (("http",), read_object),
    PaymentProbe: (("http",), read_payment),
    DeploymentProbe: (("http",), read_deployment),
    SentLogProbe: (("http",), read_outbound),
    CallLogProbe: (("http",), read_outbound),
    FileProbe: (("file",), read_file),
    CommandProbe: (("command",), read_command),
    GitProbe: (("git", "http"), read_git),
}

# Past its own timeout a runner gets this long to give up cleanly before it is cancelled.
_GRACE_S = 1.0


def _jsonable_value(value: Any, redactor: Redactor) -> Any:
    """Observation.value: scalars as they are (strings redacted, capped), containers summarised."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        text = redactor(value)
        return text if len(text) <= 1024 else text[:1024] + "..."
    if isinstance(value, dict):
        return f"<object with {len(value)} keys>"
    if isinstance(value, list):
        return f"<array of {len(value)}>"
    return redactor(str(value))[:1024]


async def _read(
    probe: Any, registry: SourceRegistry, limits: Limits
) -> tuple[Reading | None, str, Capture | None]:
    kinds, runner = _RUNNERS[type(probe)]
    try:
        cfg: SourceConfig | None = registry.resolve(
            getattr(probe, "source", None), probe.kind, kinds
        )
        if cfg is not None:
            limits = Limits(
                min(limits.timeout_s, cfg.max_timeout_s), limits.read_cap, limits.read_limit
            )
        async with asyncio.timeout(limits.timeout_s + _GRACE_S):
            return await runner(probe, cfg, registry, limits), "", None
    except ProbeError as exc:
        return None, str(exc), exc.capture
    except TimeoutError:
        return None, f"no answer within {limits.timeout_s}s; nothing was observed", None
    except Exception as exc:  # a reader bug is still "nothing observed", never a pass
        return None, f"the {probe.kind} reader failed: {type(exc).__name__}: {exc}", None


# A message quotes server or command text; the evidence keeps the rest (capped, hashed whole).
# Uncapped, a server's 3 MB field would make the signed observation too large to return.
_MESSAGE_CAP = 4096


def _check_before(probe: Any, expectation: str, before: Observation) -> None:
    """Refuse a before reading that is not of this same probe under this same expectation."""
    if before.kind != probe.kind or before.expectation != expectation:
        raise ValueError(
            f"the before reading is of {before.kind} under {before.expectation}, not of "
            f"{probe.kind} under {expectation}: pass the before reading of this same probe"
        )
    if before.probe_sha256 and before.probe_sha256 != probe_digest(probe):
        # Same kind and label, another probe (another table, another URL): its "before" says
        # nothing about what this probe reads, and a change against it proves nothing.
        raise ValueError(
            "the before reading is of another probe (its probe_sha256 differs): pass the "
            "before reading of this same probe"
        )


async def _read_and_judge(
    probe: Any, expect: Any, registry: SourceRegistry, limits: Limits
) -> tuple[Judgement, Capture | None]:
    """The judgement of one reading and the capture its evidence is made from."""
    reading, problem, partial = await _read(probe, registry, limits)
    if reading is None:
        return Judgement(Outcome.PROBE_ERROR, problem), partial
    try:
        judgement = judge(expect, reading, probe_kind=probe.kind)
    except Exception as exc:  # fail closed: a judging bug is not a verdict
        judgement = Judgement(Outcome.PROBE_ERROR, f"judging failed: {type(exc).__name__}: {exc}")
    return judgement, reading.capture


async def observe(
    probe: Any,
    expect: Any,
    *,
    registry: SourceRegistry,
    observer: str,
    before: Observation | None = None,
    evidence_cap: int = DEFAULT_EVIDENCE_CAP,
    read_cap: int = DEFAULT_READ_CAP,
    read_limit: int = DEFAULT_READ_LIMIT,
    meaning: int = MEANING,
) -> Observation:
    """Run ``probe`` once and judge it against ``expect``.

    Never raises for anything the probe meets (errors, timeouts, hostile output): those are
    ``probe-error`` observations. Raises :class:`~landed.InvalidContract` when ``probe`` or
    ``expect`` is not a valid declaration (a callable, an unknown type, nothing at all).
    ``before`` is the reading of the same probe and expectation taken before the action;
    ``meaning`` is what count, at_least and equals mean (see ``landed.probes.expect.MEANING``).
    """
    probe = coerce_probe(probe)
    expect = coerce_expectation(expect)
    # Checked here rather than when the model is built: a stored task must still load.
    invalid = probe_problem(probe)
    if invalid is not None:
        raise InvalidContract(f"invalid probe: {invalid}")
    redactor = registry.redactor
    # The label is the plan's own text (the receipt carries the expectation itself beside it):
    # redacting it hid nothing, and made a step whose expectation holds a value the verifier
    # keeps as a secret ("production"), or credential-shaped text ("?token="), unverifiable,
    # since the workflow holds every reading to its step's exact label.
    expectation = label_for(probe, expect)
    if before is not None:
        _check_before(probe, expectation, before)
    observed_at = datetime.now(UTC)
    started = time.perf_counter()
    limits = Limits(getattr(probe, "timeout_s", 30.0), read_cap, read_limit)
    judgement, capture = await _read_and_judge(probe, expect, registry, limits)
    judgement = judge_with_before(expect, judgement, before, meaning=meaning)
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    # A failed command's stderr or a server's error text can hold terminal escapes; the message
    # is shown by landed verify, the board's readers and the Web UI, so they are shown escaped.
    message = escape_for_humans(cut(redactor(judgement.message), _MESSAGE_CAP))
    observation = Observation(
        outcome=judgement.outcome,
        expectation=expectation,
        weak=is_weak(probe, expect),
        kind=probe.kind,
        source=getattr(probe, "source", None),
        observer=observer,
        observed_at=observed_at,
        duration_ms=duration_ms,
        evidence=make_evidence(capture, evidence_cap, redactor) if capture is not None else None,
        value=_jsonable_value(judgement.value, redactor),
        message=message,
        before_value=before.value if before is not None else None,
        probe_sha256=probe_digest(probe),
    )
    log.debug(
        "observed %s on %s: %s under %s (%s)",
        probe.kind,
        observation.source or "-",
        observation.outcome.value,
        redactor(expectation),  # a log outlives the task; it never shows a verifier's secret
        message,
    )
    return observation
