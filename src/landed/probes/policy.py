"""What the verifier worker agrees to read for a task: only what its own configuration allows."""

from __future__ import annotations

import base64
import os
import shlex
from pathlib import Path
from typing import Any

from landed.probes.contract import CommandProbe, probe_problem
from landed.probes.fetch import target_url
from landed.probes.http import request_path
from landed.probes.local import open_below
from landed.probes.reading import ProbeError
from landed.probes.settings import command_words, config_key
from landed.probes.sources import SourceRegistry

__all__ = ["key_secrets", "refusal", "verifier_refusal"]


def verifier_refusal(probe: Any, registry: SourceRegistry) -> str | None:
    """Why the verifier worker will not run a task's probe (its shape, or its configuration),
    or None. The verify activity refuses with it, and the role check asks it before a task
    starts (``landed.task.checkable``), so both say the same."""
    try:
        invalid = probe_problem(probe)
        if invalid is not None:
            return f"refused: the probe cannot be read as given: {invalid}"
        return refusal(probe, registry)
    except Exception as exc:  # a probe the policy cannot even read is not run
        return (
            f"refused: the verifier could not check this probe against its configuration "
            f"({type(exc).__name__}: {exc}); fix the probe or the source"
        )


def refusal(probe: Any, registry: SourceRegistry) -> str | None:
    """Why the verifier worker will not run ``probe``, or None when its configuration allows it.

    A task's probes are supplied by the task, i.e. by the agent whose work is being checked,
    and the verifier runs them with its own authority (its environment, its signing key, its
    source credentials). So here, unlike on the CLI (where the person running it configures
    it), a probe must name a configured source, and a command probe runs only when that source
    lists the command (exactly, or with `` *`` to allow added words) or says
    ``allow_any_command``. A refusal is permanent: nothing was observed and reading again
    cannot change it, so it is never a pass and never re-read.
    """
    name = getattr(probe, "source", None)
    kind = getattr(probe, "kind", "?")
    if name is None:
        hint = (
            "; an absolute URL is read only through an http source with allow_absolute_urls = true"
            if kind in ("http", "git")
            else ""
        )
        return (
            f"refused: this {kind} probe names no source, and the verifier worker reads only "
            f"sources its own configuration names{hint}; add a [sources.NAME] table (or "
            f"LANDED_SOURCES__NAME__*) to the verifier's configuration and name it in the probe"
        )
    try:
        cfg = registry.get(name)
    except ProbeError as exc:
        return f"refused: {exc}"
    if (path := request_path(probe)) is not None:
        # The source's URL policy (absolute URLs, a path climbing out of its base, a scheme
        # other than http): the answer is the same on every read, so it is a refusal, checked
        # here before anything is read, never a probe-error read again.
        try:
            target_url(name, cfg, path)
        except ProbeError as exc:
            return f"refused: {exc}"
    if isinstance(probe, CommandProbe):
        if cfg.kind != "command":
            return (
                f"refused: source {name!r} is a {cfg.kind} source; a command probe runs only "
                "through a source of kind command"
            )
        if cfg.allow_any_command:
            return None
        key = config_key(name)
        fix = (
            f"list the command in the verifier's configuration ({key}COMMANDS="
            f'\'["prog arg"]\' or commands = ["prog arg"] under [sources.{name}]), or set '
            f"allow_any_command = true there"
        )
        if probe.shell:
            return f"refused: source {name!r} does not run shell strings; {fix}"
        if probe.env:
            return (
                f"refused: source {name!r} does not let a task set the command's environment "
                f"(it could load code into an allowed program); set its env in the verifier's "
                f"configuration instead, or {fix}"
            )
        if probe.cwd is not None and not _cwd_inside(probe.cwd, cfg.path):
            return (
                f"refused: the probe's cwd {probe.cwd!r} is not a real directory below source "
                f"{name!r}'s working directory (no symlinks, no ..); give one below it"
            )
        near: list[str] | None = None
        for allowed in cfg.commands:
            prefix, anything = command_words(allowed)
            if probe.argv == prefix or (anything and probe.argv[: len(prefix)] == prefix):
                return None
            if near is None and probe.argv[: len(prefix)] == prefix:
                near = prefix
        if near is not None:
            return (
                f"refused: source {name!r} allows {shlex.join(near)!r} exactly, and this probe "
                f"adds {shlex.join(probe.argv[len(near) :])!r} (added words can make an allowed "
                f"program write or run code, e.g. git log --output=FILE); list the whole "
                f"command in {key}COMMANDS, or end the entry with ' *' to let a task add any "
                f"words to it"
            )
        return f"refused: source {name!r} does not allow the command {probe.argv[0]!r}; {fix}"
    return None


def _cwd_inside(cwd: str, root: str | None) -> bool:
    """True when a probe's relative ``cwd`` is a real directory under the source's directory,
    reached without a symlink: the same walk the command reader makes when it starts the
    process, so what passes here can be entered there."""
    try:
        fd = open_below(root or os.getcwd(), cwd)
    except (ProbeError, OSError, ValueError):
        return False
    os.close(fd)
    return True


def key_secrets(pem: str, path: str | Path | None, raw: bytes = b"") -> list[str]:
    """What of a signing key must never appear in evidence: the PEM, each of its body lines
    (a probe could print one line at a time), the raw key as hex and base64, and where the key
    lives. Redaction is the second line of defence: a probe that transforms the text (reverses
    it, say) gets past it, which is why :func:`refusal` keeps such probes from running at all."""
    found = [pem, pem.strip()]
    if raw:
        found.extend((raw.hex(), base64.b64encode(raw).decode()))
    found.extend(line.strip() for line in pem.splitlines() if line.strip() and "-----" not in line)
    if path is not None:
        found.append(str(path))
        found.append(str(Path(path).resolve()))
    return found
