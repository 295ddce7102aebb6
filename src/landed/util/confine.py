"""Roles that cannot read each other on one machine.

The verifier, the runner and the ``landed dev`` parent make themselves undumpable
(``prctl(PR_SET_DUMPABLE, 0)``): their ``/proc/<pid>/environ``, ``mem``, ``cwd`` and the like
become unreadable to other processes of the same user, and no debugger of that user can
attach. The actor, where act code runs, confines its own file access with Landlock
(landed.util.confine_policy) before it imports any act. ``LANDED_<ROLE>_CONFINE``: ``auto``
(the default: confine where the kernel can, and say what holds), ``strict`` (refuse to start
where it cannot) or ``off`` (said loudly at start)."""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections.abc import Callable, Mapping

from landed.util import landlock
from landed.util.confine_policy import PolicyError, actor_policy

__all__ = ["MODES", "ConfineError", "confine_mode", "confine_role", "undumpable"]

MODES = ("auto", "strict", "off")
_PR_SET_DUMPABLE = 4


class ConfineError(RuntimeError):
    """The role cannot be confined as its settings ask; the message names the fix."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def confine_mode(role: str, environ: Mapping[str, str]) -> str:
    name = f"LANDED_{role.upper()}_CONFINE"
    value = environ.get(name, "").strip().lower() or "auto"
    if value not in MODES:
        raise ConfineError(f"{name}={value!r} is not a confinement mode; use auto, strict or off")
    return value


def undumpable() -> bool:
    """Make this process unreadable to other processes of its user; False off Linux."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0


def confine_role(
    role: str,
    environ: Mapping[str, str],
    credentials: Mapping[str, str] | None = None,
    *,
    say: Callable[[str], None] = _stderr,
) -> str:
    """Confine this process as ``role`` asks; returns what holds, in words (also said)."""
    mode = confine_mode(role, environ)
    name = f"LANDED_{role.upper()}_CONFINE"
    if mode == "off":
        reach = (
            "every file this user can read, the keys and the ledger"
            if role == "actor"
            else ("this process's environment and memory")
        )
        held = f"confinement is OFF ({name}=off): act code can reach {reach}"
    elif role == "actor":
        held = _landlock(environ, credentials or {}, mode)
    elif undumpable():
        held = "undumpable: other processes of this user cannot read its environment or memory"
    elif mode == "strict":
        raise ConfineError(
            f"{name}=strict, and this system cannot make a process undumpable "
            "(Linux only); run each role under its own account, or set auto"
        )
    else:
        held = "not confined (not Linux): run each role under its own account"
    say(f"landed worker {role}: {held}")
    return held


def _editable_roots() -> list[str]:
    """Where an editable install's finder maps packages that are not on sys.path (setuptools'
    MAPPING: landed.workflows and landed.activities in a checkout)."""
    roots: list[str] = []
    for finder in sys.meta_path:
        mapping = getattr(sys.modules.get(finder.__module__), "MAPPING", None)
        if isinstance(mapping, dict):
            roots.extend(str(path) for path in mapping.values())
    return roots


def _package_links() -> list[str]:
    """Where landed's linked folders lead (src/landed/workflows -> workflows/): Landlock checks
    the path a link resolves to, so the actor could not import them through the link alone."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with os.scandir(package) as entries:
        return [os.path.realpath(e.path) for e in entries if e.is_symlink() and e.is_dir()]


def _landlock(environ: Mapping[str, str], credentials: Mapping[str, str], mode: str) -> str:
    version = landlock.abi()
    if version == 0:
        if mode == "strict":
            raise ConfineError(
                "LANDED_ACTOR_CONFINE=strict, and this kernel offers no Landlock (Linux 5.13+ "
                "with landlock among its LSMs); run the actor under its own account, or set auto"
            )
        return "not confined (no Landlock here): acts can read every file this user can"
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        # Landlock binds the calling thread: with others running, acts could use those.
        raise ConfineError(f"the actor started {threads - 1} threads before confining itself")
    try:
        policy = actor_policy(
            environ,
            credentials,
            cwd=os.getcwd(),
            tmp=tempfile.gettempdir(),
            sys_path=[*sys.path, *_editable_roots(), *_package_links()],
        )
        landlock.restrict_self(policy.rules(), version)
    except PolicyError as exc:
        raise ConfineError(str(exc)) from None
    except landlock.LandlockError as exc:
        if mode == "strict":
            raise ConfineError(f"{exc}; set LANDED_ACTOR_CONFINE=auto to run unconfined") from None
        return f"not confined ({exc}): acts can read every file this user can"
    denied = ", ".join(policy.deny) or "nothing (LANDED_ACTOR_DENY_PATHS is empty)"
    return (
        f"Landlock ABI {version}: reads {len(policy.read)} roots, writes in "
        f"{', '.join(policy.write)}; denied: {denied}; other processes' /proc unreadable"
    )
