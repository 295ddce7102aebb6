"""The ``verify`` tool's logic: run one probe now, as ``landed verify`` does, and say whether
what it returned is the claim. The probe comes from an agent, not from the person who
configured the server, so it is held to the verifier worker's rules: it reads only a source the
configuration names, and a command only where that source lists it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from landed.agents import words
from landed.agents.service import AgentToolError
from landed.probes.coerce import coerce_probe
from landed.probes.gate import verify
from landed.probes.policy import verifier_refusal
from landed.probes.settings import ConfigError
from landed.probes.sources import SourceRegistry, load_registry
from landed.probes.verdict import InvalidContract

__all__ = ["DEFAULT_CLAIM", "ProbeReader"]

#: The claim a probe is read for when the agent names none.
DEFAULT_CLAIM = "the claimed action"


class ProbeReader:
    """Reads probes through a source registry made for each call (the configuration is read
    again, and every pool closed, each time): by default the environment's and ``landed.toml``'s
    (``config_file`` to name another), or the one ``registry`` makes."""

    def __init__(
        self,
        registry: Callable[[], SourceRegistry] | None = None,
        *,
        config_file: str | None = None,
    ) -> None:
        self._registry = registry or (lambda: _configured(config_file))

    async def verify(self, probe: Any, expect: Any = None, action: str = DEFAULT_CLAIM) -> str:
        """DONE or NOT DONE and why, then what the probe returned. AgentToolError, naming the
        fix, for a probe or expectation that is not valid, one the configuration does not
        allow, or a configuration that does not load: nothing was read."""
        try:
            registry = self._registry()
        except ConfigError as exc:
            raise AgentToolError(f"verify: {exc}") from None
        async with registry:
            registry.task_probes = True  # an agent's probe: a cwd is entered without symlinks
            try:
                refused = verifier_refusal(coerce_probe(probe), registry)
                if refused is not None:
                    raise AgentToolError(f"verify: the probe was not run: {refused}")
                verdict = await verify(
                    action,
                    probe,
                    {"type": "non_empty"} if expect is None else expect,
                    registry=registry,
                )
            except InvalidContract as exc:
                raise AgentToolError(f"verify: {exc}") from None
        return words.probe_text(verdict)


def _configured(config_file: str | None) -> SourceRegistry:
    return load_registry(config_file=config_file, role="landed-mcp", allow_unsourced=False)
