"""``landed dev --reload``: when an act module changes on disk, restart the actor, and only the
actor (it alone runs the user's code), so the next task runs the changed act while Temporal,
the verifier and the runner keep running.

The act modules are the ones named in LANDED_ACTOR_ACTS, found on the actor's own import path
without importing them here: this process holds every role's settings, and act code runs in
the actor alone."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

from landed.dev.server import DevError

if TYPE_CHECKING:
    from landed.dev.stack import DevStack

__all__ = ["ActReloader", "act_modules", "find_module_files", "restart_role"]

_ACTS = "LANDED_ACTOR_ACTS"


def act_modules(env: Mapping[str, str]) -> list[str]:
    """The act modules the actor's environment names (comma-separated or a JSON list), read as
    the actor's own settings read them."""
    from pydantic import ValidationError

    from landed.temporal.settings import ActorSettings

    try:
        return list(ActorSettings(acts=env.get(_ACTS, "")).acts)
    except (ValidationError, ValueError) as exc:
        raise DevError(
            f"{_ACTS} cannot be read: {exc}; give module paths, comma-separated"
        ) from None


def _spec(name: str, search: Sequence[str]) -> ModuleSpec | None:
    """The spec of dotted ``name`` on ``search``, parents looked up without being imported."""
    spec: ModuleSpec | None = None
    path: list[str] | None = list(search)
    for part in name.split("."):
        if path is None:
            return None  # a parent that is a module, not a package
        spec = PathFinder.find_spec(part, path)
        if spec is None:
            return None
        path = list(spec.submodule_search_locations or []) or None
    return spec


def find_module_files(modules: Sequence[str], search: Sequence[str]) -> dict[Path, bool]:
    """Each act module's file, or its package's folder (True: watched with what it holds)."""
    found: dict[Path, bool] = {}
    for name in modules:
        spec = _spec(name, search)
        if spec is None or (spec.origin is None and not spec.submodule_search_locations):
            raise DevError(
                f"--reload: act module {name!r} ({_ACTS}) is not found on the actor's path "
                f"({os.pathsep.join(search)}); run landed dev from the folder that holds it, or "
                "add its folder to PYTHONPATH"
            )
        if spec.submodule_search_locations:
            found.update({Path(p).resolve(): True for p in spec.submodule_search_locations})
        else:
            assert spec.origin is not None
            found[Path(spec.origin).resolve()] = False
    return found


async def restart_role(
    stack: DevStack,
    role: str,
    changed: list[str],
    why: str,
    say: Callable[[dict[str, Any]], None],
    timeout: float,
) -> bool:
    """Restart ``role`` (an actor drains its acts in flight first), wait until it is ready and
    say so: what ``changed`` and ``why`` that restarts it; False (said too, with its log) when
    it did not start."""
    try:
        proc = await asyncio.to_thread(stack.start_role, role, append=True)
        await proc.wait_ready(timeout)
    except DevError as exc:
        log = (stack.home / "logs" / f"{role}.log").resolve()
        message = f"the {role} did not start after {why}: {exc}; fix it and save again (log: {log})"
        failed = {"event": "reload_failed", "role": role, "changed": changed, "why": why}
        say({**failed, "message": message})
        return False
    say({"event": "reloaded", "role": role, "changed": changed, "why": why, "pid": proc.pid})
    return True


def actor_search_path(env: Mapping[str, str], actor_dir: Path) -> list[str]:
    """Where the actor's ``python -m landed worker actor`` imports from: its working directory,
    then its PYTHONPATH (the folder landed dev was started in comes first there)."""
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [str(actor_dir), *extra]


@dataclass
class ActReloader:
    """Watches the act modules and restarts the stack's actor when one changes.

    ``say`` receives one event per reload: {"event": "reloaded", ...} or
    {"event": "reload_failed", ...}. ``holds_actor`` is true while the actor is being
    restarted, or failed to start after a change: the stack then waits for the next change
    instead of stopping."""

    stack: DevStack
    say: Callable[[dict[str, Any]], None]
    timeout: float = 60.0
    holds_actor: bool = False
    watched: dict[Path, bool] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    def prepare(self) -> ActReloader:
        env = self.stack.role_environment("actor")
        modules = act_modules(env)
        if not modules:
            raise DevError(
                f"--reload restarts the actor when an act module changes, and {_ACTS} names "
                f"none; set {_ACTS}=your_acts_module (or leave --reload out)"
            )
        search = actor_search_path(env, self.stack.role_dir("actor"))
        self.watched = find_module_files(modules, search)
        return self

    def _relevant(self, _change: object, path: str) -> bool:
        changed = Path(path)
        for target, folder in self.watched.items():
            if changed == target or (
                folder and changed.suffix == ".py" and target in changed.parents
            ):
                return True
        return False

    async def run(self) -> None:
        """Restart the actor after each change, until ``stop``."""
        from watchfiles import awatch

        folders = {t if folder else t.parent for t, folder in self.watched.items()}
        recursive = any(self.watched.values())
        try:
            async for changes in awatch(
                *folders, watch_filter=self._relevant, stop_event=self._stop, recursive=recursive
            ):
                await self.reload(sorted({Path(p) for _, p in changes}))
        except DevError:
            raise
        except Exception as exc:  # the watch itself failed (no inotify watch left, a folder gone)
            where = ", ".join(map(str, sorted(folders)))
            raise DevError(
                f"--reload stopped watching {where}: {exc}; restart landed dev (without --reload "
                "if the watch keeps failing)"
            ) from None

    async def reload(self, changed: list[Path]) -> None:
        """Restart the actor (it drains its acts in flight first) and wait for it."""
        for path in changed:
            # A change within the second the cached bytecode was written, at the same size,
            # would be taken for the old module.
            with contextlib.suppress(OSError, ValueError):
                Path(importlib.util.cache_from_source(str(path))).unlink()
        names = [p.name for p in changed]
        self.holds_actor = True
        why = f"{', '.join(names)} changed"
        if await restart_role(self.stack, "actor", names, why, self.say, self.timeout):
            self.holds_actor = False

    def stop(self) -> None:
        self._stop.set()
