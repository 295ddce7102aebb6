"""The Python API: ``verify()`` returns a verdict, ``gate()`` raises unless the claim landed."""

from __future__ import annotations

from typing import Any

from landed.probes.contract import Observation
from landed.probes.observe import DEFAULT_EVIDENCE_CAP, observe
from landed.probes.settings import default_observer
from landed.probes.sources import SourceRegistry
from landed.probes.verdict import InvalidContract, Verdict, error_for

__all__ = ["gate", "verify"]


async def verify(
    action: str,
    probe: Any,
    expect: Any,
    *,
    registry: SourceRegistry | None = None,
    observer: str | None = None,
    before: Observation | None = None,
    evidence_cap: int = DEFAULT_EVIDENCE_CAP,
) -> Verdict:
    """Read the result of ``action`` back with ``probe`` and judge it against ``expect``.

    ``probe`` and ``expect`` are data (a landed model or a dict such as ``{"kind": "record",
    "source": "orders-db", "query": "..."}``), never callables: landed runs the read itself.
    No retry happens here; a ``probe-error`` verdict is the caller's to retry. Without a
    ``registry`` one is built from the environment and ``landed.toml`` and closed afterwards.
    """
    if not isinstance(action, str) or not action.strip():
        raise InvalidContract("name the action being verified (a non-empty string)")
    if registry is not None:
        observation = await observe(
            probe,
            expect,
            registry=registry,
            observer=observer or registry.observer,
            before=before,
            evidence_cap=evidence_cap,
        )
        return Verdict.of(action, observation)
    # landed.verify()/gate() run inside the caller's own code, with its authority.
    async with SourceRegistry.from_settings(allow_unsourced=True) as own:
        observation = await observe(
            probe,
            expect,
            registry=own,
            observer=observer or own.observer or default_observer(),
            before=before,
            evidence_cap=evidence_cap,
        )
    return Verdict.of(action, observation)


async def gate(
    action: str,
    probe: Any,
    expect: Any,
    *,
    registry: SourceRegistry | None = None,
    observer: str | None = None,
    before: Observation | None = None,
    evidence_cap: int = DEFAULT_EVIDENCE_CAP,
) -> Verdict:
    """Like :func:`verify`, but raise unless the claim landed.

    Raises :class:`ProbeFailed` when nothing was observed (the only case worth retrying),
    :class:`Mismatch` (or its subclasses :class:`Empty`, :class:`Vacuous`,
    :class:`Duplicated`) when the state was read and disagrees, and :class:`InvalidContract`
    when the probe or expectation is not a valid declaration. All are :class:`NotLanded`.
    """
    verdict = await verify(
        action,
        probe,
        expect,
        registry=registry,
        observer=observer,
        before=before,
        evidence_cap=evidence_cap,
    )
    if not verdict.landed:
        raise error_for(verdict)
    return verdict
