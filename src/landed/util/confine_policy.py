"""What the actor may reach on disk: a pure allow-list (Landlock has no deny rules), built
from the actor's own settings, with the paths it must never reach cut out of it.

Read (and execute): the system's libraries and configuration, Python and the venv, every
entry of ``sys.path`` (the project's act modules), the actor's own ``/proc/<pid>``, CA bundles
and Temporal TLS files its environment names, and LANDED_ACTOR_READ_PATHS. Read and write:
its working directory, its temp dir, the directory of each SQLite credential (a database
writes its journal beside itself), a few devices and LANDED_ACTOR_ALLOW_PATHS.
LANDED_ACTOR_DENY_PATHS (``landed dev`` sets its home, where the keys, the ledger and
Temporal's database live) is cut out: a readable directory holding a denied path is opened
child by child; a writable one holding it is refused, since creating and deleting files is
granted on a whole directory tree."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from landed.util.landlock import READ, READ_DIR, WRITE, Rule

__all__ = ["ALLOW_PATHS", "DENY_PATHS", "READ_PATHS", "Policy", "PolicyError", "actor_policy"]

ALLOW_PATHS = "LANDED_ACTOR_ALLOW_PATHS"
READ_PATHS = "LANDED_ACTOR_READ_PATHS"
DENY_PATHS = "LANDED_ACTOR_DENY_PATHS"

_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt")
_PROC = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/sys/devices/system/cpu")
_DEVICES_READ = ("/dev/urandom", "/dev/random")
_DEVICES_WRITE = ("/dev/null", "/dev/zero", "/dev/full", "/dev/shm")
_NAMED_FILES = re.compile(
    r"SSL_CERT_(?:FILE|DIR)|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|TEMPORAL_\w+_(?:PATH|FILE)"
)
_SQLITE = re.compile(r"sqlite(?:\+\w+)?:///(?P<path>[^?]+)")


class PolicyError(ValueError):
    """The actor's settings would let it write where it must never reach."""


@dataclass(frozen=True)
class Policy:
    read: tuple[str, ...]
    write: tuple[str, ...]
    deny: tuple[str, ...]

    def rules(self) -> list[Rule]:
        """Landlock rules for this policy; raises PolicyError for a writable root over a
        denied path."""
        for root in self.write:
            over = [d for d in self.deny if _within(d, root)]
            if over:
                raise PolicyError(
                    f"the actor may write in {root}, which holds {over[0]} (the keys, the "
                    f"ledger or the Temporal database); keep what acts write in a directory of "
                    f"its own (e.g. {os.path.join(root, 'sor')}) or set LANDED_ACTOR_CONFINE=off"
                )
        rules = [Rule(w, WRITE) for w in self.write]
        for root in self.read:
            rules.extend(_readable(root, self.deny))
        return rules


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _readable(root: str, deny: Sequence[str]) -> list[Rule]:
    if any(_within(root, d) for d in deny):
        return []  # a denied path, or inside one: never a read root
    if not any(_within(d, root) for d in deny):
        return [Rule(root, READ)]
    # Listing names is allowed down to the denied path (rules hold for a whole tree); reading
    # is allowed child by child, around it.
    rules = [Rule(root, READ_DIR)]
    try:
        children = sorted(os.listdir(root))
    except OSError:
        return rules
    for name in children:
        rules.extend(_readable(os.path.realpath(os.path.join(root, name)), deny))
    return rules


def _paths(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p.strip()]


def _sqlite_dirs(credentials: Mapping[str, str], cwd: str) -> list[str]:
    dirs = []
    for value in credentials.values():
        match = _SQLITE.match(value)
        if match and match["path"] != ":memory:":
            dirs.append(os.path.dirname(os.path.join(cwd, match["path"])))
    return dirs


def _real(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(os.path.realpath(p) for p in paths if p and os.path.isabs(p)))


def actor_policy(
    environ: Mapping[str, str],
    credentials: Mapping[str, str],
    *,
    cwd: str,
    tmp: str,
    sys_path: Sequence[str] = (),
) -> Policy:
    """The actor's policy from its environment, its credentials and where it runs."""
    python = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    named = [v for k, v in environ.items() if _NAMED_FILES.fullmatch(k)]
    # Temporal's profile file, read at connect (after confinement).
    config = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", ""), ".config")
    named.append(os.path.join(config, "temporalio"))
    read = [*_SYSTEM, *python, *sys_path, *named, *_PROC, *_DEVICES_READ]
    read += [f"/proc/{os.getpid()}", *_paths(environ.get(READ_PATHS))]
    write = [cwd, tmp, *_DEVICES_WRITE, *_sqlite_dirs(credentials, cwd)]
    write += _paths(environ.get(ALLOW_PATHS))
    return Policy(
        read=_real(os.path.join(cwd, p) for p in read),
        write=_real(os.path.join(cwd, p) for p in write),
        deny=_real(os.path.join(cwd, p) for p in _paths(environ.get(DENY_PATHS))),
    )
