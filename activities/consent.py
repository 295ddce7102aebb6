"""The verifier's consent and do-not-contact check before an act that contacts a person (GOV-6).

It runs under the verifier's identity, on the verifier's own named source, with landed's one
fixed query (``landed.task.consent``): the task names whom it contacts, never what is read.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from temporalio import activity

from landed.probes.contract import Outcome
from landed.probes.observe import observe
from landed.probes.reading import ProbeError
from landed.probes.settings import ConfigError
from landed.probes.sources import SourceRegistry
from landed.task.consent import (
    ConsentInput,
    ConsentOutput,
    consent_probe,
    judge_consent,
    unreadable,
)
from landed.task.names import CONSENT_ACTIVITY
from landed.telemetry.logs import task_event

__all__ = ["ConsentActivities"]

_ANY_ROWS = {"type": "non_empty"}


class ConsentActivities:
    """Reads consent through the verifier's sources, as the verifier."""

    def __init__(self, registry: SourceRegistry, identity: str) -> None:
        self._registry = registry
        self._identity = identity

    @activity.defn(name=CONSENT_ACTIVITY)
    async def consent(self, inp: ConsentInput) -> ConsentOutput:
        """Allowed only on a read that shows consent and no do-not-contact; anything else,
        a read that failed included, refuses (fail closed)."""
        contacts = inp.contacts
        try:
            cfg = self._registry.get(contacts.consent_source)
        except (ProbeError, ConfigError, KeyError) as exc:
            return self._answer(inp, unreadable(contacts, str(exc)))
        scheme = urlsplit(cfg.url).scheme.lower() if cfg.url else "sqlite"
        probe = consent_probe(contacts, postgres=scheme in ("postgres", "postgresql"))
        seen = await observe(probe, _ANY_ROWS, registry=self._registry, observer=self._identity)
        if seen.outcome == Outcome.PROBE_ERROR:
            return self._answer(inp, unreadable(contacts, seen.message or "nothing was observed"))
        return self._answer(inp, judge_consent(contacts, seen.value))

    def _answer(self, inp: ConsentInput, condition: str | None) -> ConsentOutput:
        task_event(
            "consent", role="verifier", task_id=inp.task_id, attempt=0, allowed=condition is None
        )
        return ConsentOutput(
            allowed=condition is None, condition=condition or "", checked_by=self._identity
        )
