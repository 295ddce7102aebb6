"""``landed dev --reload`` and ``landed.toml``: when the file in the folder landed dev started in
changes, restart only the roles whose part of it changed (landed.dev.settings_file): the
verifier for its sources (and the rest of its part), the actor for its ``[actor]`` table (its
acts, its credentials), the runner for its ``[runner]`` table. A file that no longer reads is
said, and nothing restarts until it does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from landed.dev.reload import restart_role
from landed.dev.server import DevError
from landed.dev.settings_file import FILE_NAME, changed_parts, read_parts

if TYPE_CHECKING:
    from landed.dev.stack import DevStack

__all__ = ["SettingsReloader"]

#: Restart order: the runner first (it routes), the actor last (it drains acts in flight).
_ORDER = ("runner", "verifier", "actor")


@dataclass
class SettingsReloader:
    """Watches ``landed.toml`` beside landed dev; ``holding`` names the roles being restarted,
    or that failed to start after a change (the stack waits for the next change for them)."""

    stack: DevStack
    say: Callable[[dict[str, Any]], None]
    timeout: float = 60.0
    holding: set[str] = field(default_factory=set)
    path: Path | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    def prepare(self) -> SettingsReloader | None:
        """This reloader, or None when there is no landed.toml to watch."""
        path = (self.stack.cwd or Path.cwd()).resolve() / FILE_NAME
        if not path.is_file():
            return None
        self.path = path
        return self

    def _relevant(self, _change: object, path: str) -> bool:
        return Path(path) == self.path

    async def run(self) -> None:
        """Restart the roles whose part changed after each save, until ``stop``."""
        from watchfiles import awatch

        assert self.path is not None
        folder = self.path.parent
        checked = False
        try:
            # An empty yield each second once the watch is set up: the first one reads the
            # file again, so a save made while the watch was being set up is not missed.
            async for changes in awatch(
                folder,
                watch_filter=self._relevant,
                stop_event=self._stop,
                recursive=False,
                rust_timeout=1000,
                yield_on_timeout=True,
            ):
                if changes or not checked:
                    checked = True
                    await self.reload()
        except Exception as exc:  # the watch itself failed (no inotify watch left)
            raise DevError(
                f"--reload stopped watching {self.path}: {exc}; restart landed dev"
            ) from None

    async def reload(self) -> None:
        assert self.path is not None
        try:
            parts = read_parts(self.path) if self.path.is_file() else {}
        except DevError as exc:
            self.say(
                {
                    "event": "reload_failed",
                    "role": None,
                    "changed": [FILE_NAME],
                    "why": f"{FILE_NAME} changed",
                    "message": f"{exc}; nothing restarted",
                }
            )
            return
        # Against what each role was started with (the stack records it at each start).
        changed = changed_parts(self.stack.file_parts, parts)
        for role in (r for r in _ORDER if r in changed):
            keys = changed[role]
            why = f"{', '.join(keys)} changed in {FILE_NAME}"
            self.holding.add(role)
            if await restart_role(self.stack, role, keys, why, self.say, self.timeout):
                self.holding.discard(role)

    def stop(self) -> None:
        self._stop.set()
