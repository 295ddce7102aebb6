"""``@landed.act``: how users register the functions the actor runs, and what those receive."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from landed.task.credentials import Credentials
from landed.task.gate_spec import IRREVERSIBLE_KINDS
from landed.task.messages import ActReport

__all__ = ["ActContext", "ActFn", "ActLoadError", "act", "collect_acts", "irreversible_kind"]

ActFn = Callable[[dict[str, Any], "ActContext"], Awaitable[ActReport] | ActReport]
F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__landed_act__"
# GOV-5: an act registered as irreversible runs only with a person's approval.
_IRREVERSIBLE = "__landed_irreversible__"


@dataclass(frozen=True)
class ActContext:
    """What an act may use: the task's identity, its idempotency key and the actor's own
    credentials (named, from the actor's configuration). Nothing of the verifier's or runner's."""

    task_id: str
    attempt: int
    idempotency_key: str
    identity: str
    credentials: Credentials = field(default_factory=Credentials)
    heartbeat: Callable[..., None] = field(default=lambda *details: None)

    def __post_init__(self) -> None:
        if not isinstance(self.credentials, Credentials):  # a plain mapping of name -> URL
            object.__setattr__(self, "credentials", Credentials(self.credentials))

    def credential(self, name: str) -> str:
        """The actor credential called ``name`` as configured (a URL or DSN string); a clear
        error when the actor has none. ``ctx.credentials.sql/url/http(name)`` give it parsed."""
        return self.credentials[name]


def act(name: str, *, irreversible: str | None = None) -> Callable[[F], F]:
    """Mark ``fn`` as the act called ``name``.

    ``irreversible`` (send, publish, spend, provision, migrate) marks an act that cannot be
    undone: the actor runs it only for a task approved at its approval gate, and refuses it
    otherwise (the task settles held, nothing done), so a task that forgot to declare
    ``irreversible`` never sends unapproved.

    The function takes ``(input: dict, ctx: ActContext)`` and returns an ``ActReport`` (sync or
    async). The actor worker imports the modules named in its configuration and collects every
    marked function; nothing is registered globally.
    """
    if not name or not all(ch.isalnum() or ch in "_.:-" for ch in name):
        raise ValueError(f"act name {name!r} must be non-empty letters, digits or _.:-")

    if irreversible is not None and irreversible not in IRREVERSIBLE_KINDS:
        raise ValueError(
            f"irreversible={irreversible!r} is not one of {', '.join(IRREVERSIBLE_KINDS)}"
        )

    def mark(fn: F) -> F:
        setattr(fn, _MARK, name)
        if irreversible is not None:
            setattr(fn, _IRREVERSIBLE, irreversible)
        return fn

    return mark


def irreversible_kind(fn: object) -> str | None:
    """What an act registered as irreversible cannot undo (None: it can be undone)."""
    kind = getattr(fn, _IRREVERSIBLE, None)
    return kind if isinstance(kind, str) else None


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
