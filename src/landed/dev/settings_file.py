"""``landed.toml`` under ``landed dev``: one file in the folder it starts in, split into each
role's part. The ``[actor]`` and ``[runner]`` tables are those roles' settings (each key is the
setting's LANDED_ACTOR_* / LANDED_RUNNER_* name without its prefix); everything else is the
verifier's (``[sources.NAME]``, ``observer``, ``allow_unsourced``: landed.probes.settings).

Each role is handed its own part only: the actor and the runner as environment variables
(the shell's own LANDED_<ROLE>_* win), the verifier as a copy of its part in its own
directory, so the runner's ledger URL and the actor's credentials never reach the verifier, nor
the verifier's sources the actor."""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from landed.dev.server import DevError

__all__ = ["FILE_NAME", "ROLE_TABLES", "changed_parts", "read_parts", "role_variables"]
__all__ += ["write_toml"]

FILE_NAME = "landed.toml"
#: The tables that are another role's settings, not the verifier's.
ROLE_TABLES = ("actor", "runner")
_MAX_BYTES = 1 << 20


def read_parts(path: Path) -> dict[str, dict[str, Any]]:
    """Each role's part of the file at ``path`` (as landed.probes.settings reads it: the keys
    under a ``[landed]`` table, if there is one); DevError naming the fix when it cannot be."""
    try:
        raw = path.read_bytes()[: _MAX_BYTES + 1]
        if len(raw) > _MAX_BYTES:
            raise ValueError(f"larger than {_MAX_BYTES} bytes")
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise DevError(f"{path} cannot be read: {exc}; fix the file (it is TOML)") from None
    if isinstance(data.get("landed"), dict):
        data = data["landed"]
    parts: dict[str, dict[str, Any]] = {}
    for role in ROLE_TABLES:
        table = data.get(role, {})
        if not isinstance(table, dict):
            raise DevError(f"{path}: {role} must be a table ([{role}]), not a single value")
        parts[role] = table
    parts["verifier"] = {k: v for k, v in data.items() if k not in ROLE_TABLES}
    return parts


def role_variables(role: str, part: Mapping[str, Any]) -> dict[str, str]:
    """The actor's or runner's part as its settings' environment variables (lists and tables as
    JSON, which the settings read)."""
    prefix = f"LANDED_{role.upper()}_"
    return {
        f"{prefix}{key.upper()}": value if isinstance(value, str) else json.dumps(value)
        for key, value in part.items()
    }


def _value(value: Any) -> str:
    """One TOML value, inline (strings as JSON strings, which TOML reads alike)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float | str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_value, value)) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
        )
    return str(value.isoformat())  # a TOML date, time or date-time, as tomllib read it


def write_toml(part: Mapping[str, Any], path: Path) -> Path:
    """Write ``part`` to ``path`` (owner-only) as TOML that reads back to the same values."""
    text = "".join(f"{json.dumps(str(k))} = {_value(v)}\n" for k, v in part.items())
    if tomllib.loads(text) != dict(part):
        raise DevError(f"the verifier's part of {FILE_NAME} could not be copied to {path}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def changed_parts(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Each role whose part changed, with the keys that did (added, removed or altered)."""
    changed: dict[str, list[str]] = {}
    for role in ("actor", "verifier", "runner"):
        keys = _changed_keys(old.get(role, {}), new.get(role, {}))
        if keys:
            changed[role] = keys
    return changed


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys that differ; in a table both sides have (``[sources]``), which of its keys."""
    keys: list[str] = []
    for key in sorted({*before, *after}):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            keys += [f"{key}.{k}" for k in sorted({*old, *new}) if old.get(k) != new.get(k)]
        else:
            keys.append(key)
    return keys
