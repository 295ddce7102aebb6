"""``@landed.act``: how users register the functions the actor runs, and what those receive."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from landed.task.messages import ActReport

__all__ = ["ActContext", "ActFn", "ActLoadError", "act", "collect_acts"]

ActFn = Callable[[dict[str, Any], "ActContext"], Awaitable[ActReport] | ActReport]
F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__landed_act__"


@dataclass(frozen=True)
class ActContext:
    """What an act may use: the task's identity, its idempotency key and the actor's own
    credentials (named, from the actor's configuration). Nothing of the verifier's or runner's."""

    task_id: str
    attempt: int
    idempotency_key: str
    identity: str
    credentials: Mapping[str, str] = field(default_factory=dict)
    heartbeat: Callable[..., None] = field(default=lambda *details: None)

    def credential(self, name: str) -> str:
        """The actor credential called ``name``; a clear error when the actor has none."""
        try:
            return self.credentials[name]
        except KeyError:
            known = ", ".join(sorted(self.credentials)) or "none"
            raise KeyError(
                f"the actor has no credential named {name!r} (configured: {known}); add it to "
                f"LANDED_ACTOR_CREDENTIALS as a JSON object of name -> URL/DSN"
            ) from None


def act(name: str) -> Callable[[F], F]:
    """Mark ``fn`` as the act called ``name``.

    The function takes ``(input: dict, ctx: ActContext)`` and returns an ``ActReport`` (sync or
    async). The actor worker imports the modules named in its configuration and collects every
    marked function; nothing is registered globally.
    """
    if not name or not all(ch.isalnum() or ch in "_.:-" for ch in name):
        raise ValueError(f"act name {name!r} must be non-empty letters, digits or _.:-")

    def mark(fn: F) -> F:
        setattr(fn, _MARK, name)
        return fn

    return mark


class ActLoadError(RuntimeError):
    """An act module could not be imported or declares a name twice."""


def collect_acts(modules: Iterable[ModuleType | str]) -> dict[str, ActFn]:
    """Collect the ``@landed.act`` functions of each module, by act name.

    A module comes as an object (landed's built-in acts, which the actor's worker assembly
    imports) or as a path imported here (the user's modules named in LANDED_ACTOR_ACTS).
    """
    found: dict[str, ActFn] = {}
    origin: dict[str, str] = {}
    for given in modules:
        module = given if isinstance(given, ModuleType) else _import_act_module(given)
        for value in vars(module).values():
            name = getattr(value, _MARK, None)
            if not isinstance(name, str) or not callable(value):
                continue
            if name in found and found[name] is not value:
                raise ActLoadError(
                    f"act {name!r} is declared in both {origin[name]} and {module.__name__}; "
                    "rename one"
                )
            found[name] = value
            origin[name] = module.__name__
    return found


def _import_act_module(path: str) -> ModuleType:
    try:
        return importlib.import_module(path)
    except Exception as exc:
        raise ActLoadError(
            f"cannot import act module {path!r}: {exc}; check the module path given to "
            f"LANDED_ACTOR_ACTS (it must be importable from the actor's working directory)"
        ) from exc
