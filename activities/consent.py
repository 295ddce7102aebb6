"""The verifier's consent and do-not-contact check before an act that contacts a person (GOV-6).

It runs under the verifier's identity, on the verifier's own named source, with landed's one
fixed query (``landed.governance.consent``): the task names whom it contacts, never what is read.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from temporalio import activity

from landed.governance.consent import consent_probe, judge_consent, unreadable
from landed.governance.consent_file import CONSENT_FILE_CAP, judge_consent_file
from landed.probes.reading import Limits, ProbeError
from landed.probes.settings import ConfigError
from landed.probes.sources import SourceRegistry
from landed.probes.sql import read_record
from landed.task.gate_messages import ConsentInput, ConsentOutput
from landed.task.gate_spec import Contacts
from landed.task.names import CONSENT_ACTIVITY
from landed.telemetry.logs import task_event
from landed.util.strictjson import TooLarge, read_at_most

__all__ = ["ConsentActivities"]


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
        if cfg.kind == "file":
            return self._answer(inp, await self._from_file(contacts, cfg.path))
        scheme = urlsplit(cfg.url).scheme.lower() if cfg.url else "sqlite"
        probe = consent_probe(contacts, postgres=scheme in ("postgres", "postgresql"))
        # The record reader itself (its read-only transaction, row cap and deadline), bounded
        # once more here: a source that never answers is a refusal, never a pass.
        try:
            async with asyncio.timeout(contacts.timeout_s + 1):
                reading = await read_record(
                    probe, cfg, self._registry, Limits(min(contacts.timeout_s, cfg.max_timeout_s))
                )
        except TimeoutError:
            why = f"no answer within {contacts.timeout_s:g} s"
            return self._answer(inp, unreadable(contacts, why))
        except Exception as exc:  # a ProbeError, or a reader's own failure: nothing was read
            why = self._registry.redactor(f"{type(exc).__name__}: {exc}")
            return self._answer(inp, unreadable(contacts, why))
        return self._answer(inp, judge_consent(contacts, reading.value))

    async def _from_file(self, contacts: Contacts, path: str | None) -> str | None:
        """The file source's verdict; a file that cannot be read within the timeout, or is
        longer than CONSENT_FILE_CAP, refuses (the fix named)."""
        name = contacts.consent_source
        if not path:
            why = f"file source {name!r} has no path; set it to the consent file's path"
            return unreadable(contacts, why)
        try:
            async with asyncio.timeout(contacts.timeout_s):
                data = await asyncio.to_thread(
                    read_at_most, path, CONSENT_FILE_CAP, f"consent file {path}"
                )
        except TimeoutError:
            return unreadable(
                contacts, f"consent file {path}: no answer within {contacts.timeout_s:g} s"
            )
        except TooLarge as exc:
            return unreadable(contacts, f"{exc}; fix: split the file or prune old entries")
        except OSError as exc:
            why = (
                f"consent file {path} could not be opened ({exc.strerror or exc}); fix: create "
                f"it, or point source {name!r}'s path at the consent file"
            )
            return unreadable(contacts, why)
        return judge_consent_file(contacts, data, path)

    def _answer(self, inp: ConsentInput, condition: str | None) -> ConsentOutput:
        task_event(
            "consent", role="verifier", task_id=inp.task_id, attempt=0, allowed=condition is None
        )
        return ConsentOutput(
            allowed=condition is None, condition=condition or "", checked_by=self._identity
        )
