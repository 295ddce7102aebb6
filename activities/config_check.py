"""The verifier's answer to LandedPreflight (``landed.task.checkable``): whether its own
configuration allows every probe and source a task names. Nothing is read."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from landed.probes.policy import verifier_refusal
from landed.probes.reading import ProbeError
from landed.probes.sources import SourceRegistry
from landed.task.checkable import (
    CHECK_CONFIG_ACTIVITY,
    ConfigInput,
    ConfigOutput,
    config_problems,
)

__all__ = ["VerifierCheck"]


class VerifierCheck:
    """The verify activity's own refusal, applied to each probe; nothing is read."""

    def __init__(self, registry: SourceRegistry, identity: str) -> None:
        self._registry = registry
        self._identity = identity

    def _source(self, name: str) -> str | None:
        try:
            self._registry.get(name)
        except ProbeError as exc:
            return str(exc)
        return None

    def _refusal(self, probe: Any) -> str | None:
        return verifier_refusal(probe, self._registry)

    @activity.defn(name=CHECK_CONFIG_ACTIVITY)
    async def check_config(self, inp: ConfigInput) -> ConfigOutput:
        found = config_problems(inp, self._refusal, self._source)
        problems = [self._registry.redactor(p) for p in found]
        return ConfigOutput(verifier=self._identity, problems=problems)
