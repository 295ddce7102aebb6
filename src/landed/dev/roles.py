"""The worker roles of ``landed dev``: what each role's environment holds and the role as a
process of its own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from landed.dev.server import NO_PROFILE_FILE, DevError, stop_process
from landed.util.orphans import stop_with_parent

__all__ = [
    "ACTOR_ENV_ALLOWED",
    "ACTOR_PASS_ENV",
    "ROLE_PREFIXES",
    "RoleProcess",
    "actor_pass_env",
    "distinct_identities",
    "role_env",
]

ROLE_PREFIXES: dict[str, tuple[str, ...]] = {
    # Each role sees only its own variables: the actor never receives a verifier source,
    # the signing key path or the ledger URL, because they are never put in its environment.
    "actor": ("LANDED_ACTOR_",),
    "verifier": (
        "LANDED_VERIFIER_",
        "LANDED_SOURCES__",
        "LANDED_CONFIG_FILE",
        "LANDED_OBSERVER",
        "LANDED_ALLOW_UNSOURCED",
    ),
    "runner": ("LANDED_RUNNER_", "LANDED_LEDGER_URL"),
}


# What the actor inherits from the shell that started `landed dev`: what a process needs to
# run (paths, locale, temp dir, CA bundles, the dynamic linker's path, Python's own settings)
# and nothing that could be a credential. A shell's PGPASSWORD, DATABASE_URL, proxy URL or
# cloud keys are the user's, not the agent's; acts that need a variable get it by name through
# LANDED_ACTOR_PASS_ENV.
ACTOR_ENV_ALLOWED = frozenset(
    {
        "PATH",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "TMPDIR",
        "TEMP",
        "TMP",
        "VIRTUAL_ENV",
        "LD_LIBRARY_PATH",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "SYSTEMROOT",
        "NO_COLOR",
    }
)
# LC_ALL, LC_CTYPE, ...; CPython's own settings: PYTHON and capitals or digits (PYTHONPATH,
# PYTHONUTF8) and the few PYTHON_ names of 3.13 and later, so PYTHON_INDEX_TOKEN and the like
# are not among them.
_ACTOR_ENV_PATTERN = re.compile(
    r"LC_[A-Z]+|PYTHON[A-Z0-9]+"
    r"|PYTHON_(?:GIL|CPU_COUNT|COLORS|BASIC_REPL|HISTORY|FROZEN_MODULES|PERF_JIT_SUPPORT|JIT)"
)
ACTOR_PASS_ENV = "LANDED_ACTOR_PASS_ENV"


def actor_pass_env(env: Mapping[str, str]) -> list[str]:
    """The variable names LANDED_ACTOR_PASS_ENV hands to the actor (comma-separated)."""
    names = [n.strip() for n in env.get(ACTOR_PASS_ENV, "").split(",") if n.strip()]
    foreign = sorted(n for n in names if n.upper().startswith(("LANDED_", "TEMPORAL_")))
    if foreign:
        raise DevError(
            f"{ACTOR_PASS_ENV} names {', '.join(foreign)}: landed and Temporal settings are "
            "never passed to the actor this way; give the actor its own LANDED_ACTOR_* settings"
        )
    return names


def _actor_base(source: Mapping[str, str], named: list[str]) -> dict[str, str]:
    missing = sorted(n for n in named if n not in source)
    if missing:
        raise DevError(
            f"{ACTOR_PASS_ENV} names {', '.join(missing)}, which this shell does not set; set "
            "it or take the name out"
        )
    return {
        k: v
        for k, v in source.items()
        if k in ACTOR_ENV_ALLOWED or _ACTOR_ENV_PATTERN.fullmatch(k) or k in named
    }


def role_env(
    role: str,
    *,
    base: Mapping[str, str] | None = None,
    temporal_address: str,
    namespace: str = "default",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a role process gets, plus the role's own variables and the Temporal
    address.

    The verifier and the runner get the parent's environment minus every landed and Temporal
    variable (a ledger URL may lean on PGPASSWORD, say). The actor gets only what a process
    needs to run (``ACTOR_ENV_ALLOWED``, ``LC_*``, CPython's ``PYTHON*``) and the variables
    named in LANDED_ACTOR_PASS_ENV: whatever else the shell holds may be a credential the agent
    must not have. No role reads a Temporal profile file (``NO_PROFILE_FILE``).
    """
    source = dict(os.environ if base is None else base)
    if role == "actor":
        env = _actor_base(source, actor_pass_env({**source, **dict(extra or {})}))
    else:
        # Upper-cased: settings are read from the environment whatever the case of the name.
        env = {
            k: v for k, v in source.items() if not k.upper().startswith(("LANDED_", "TEMPORAL_"))
        }
    mine = ROLE_PREFIXES[role]
    env.update({k: v for k, v in source.items() if k.startswith(mine)})
    env.update(extra or {})
    leaked = [k for k in env if k.upper().startswith("LANDED_") and not k.startswith(mine)]
    if leaked:
        raise DevError(f"{role} would receive another role's settings: {', '.join(leaked)}")
    env["TEMPORAL_ADDRESS"] = temporal_address
    env["TEMPORAL_NAMESPACE"] = namespace
    env.update(NO_PROFILE_FILE)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass
class RoleProcess:
    """One worker role in its own process; its stdout/stderr go to ``log_file``."""

    role: str
    env: dict[str, str]
    log_file: Path
    cwd: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    ready: dict[str, Any] | None = None
    #: Add to the log instead of starting it afresh (a restart keeps the earlier run's lines).
    append: bool = False
    _log: IO[bytes] | None = None
    _log_start: int = 0

    def start(self) -> RoleProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_file.open("ab" if self.append else "wb")
        # The ready line is looked for only in what this run writes.
        self._log_start = self._log.tell()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "landed", "worker", self.role],
            env=self.env,
            cwd=self.cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=stop_with_parent(),
        )
        self.ready = None
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def poll_ready(self) -> dict[str, Any] | None:
        """The role's ready line once it printed one; raises if the process already exited."""
        if self.ready is not None:
            return self.ready
        with self.log_file.open("rb") as log:
            log.seek(self._log_start)
            text = log.read().decode(errors="replace")
        for line in text.splitlines():
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict) and data.get("event") == "ready":
                    self.ready = data
                    return self.ready
        if self.proc is not None and self.proc.poll() is not None:
            tail = "\n".join(text.splitlines()[-15:])
            raise DevError(
                f"the {self.role} worker exited with status {self.proc.returncode}:\n{tail}"
            )
        return None

    async def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = self.poll_ready()
            if ready is not None:
                return ready
            await asyncio.sleep(0.05)
        raise DevError(f"the {self.role} worker did not report ready within {timeout:.0f}s")

    def kill(self) -> None:
        """SIGKILL: what a crash looks like to Temporal."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self, grace: float = 10.0, *, signalled: bool = False) -> None:
        if self.proc is not None:
            stop_process(self.proc, grace, signalled=signalled)
        if self._log is not None:
            self._log.close()
            self._log = None


def distinct_identities(envs: Mapping[str, Mapping[str, str]]) -> None:
    """Refuse two roles configured under one worker identity (the verifier as the actor would
    grade the actor's own work: every reading would be refused, DOD-2)."""
    seen: dict[str, str] = {}
    for role, env in envs.items():
        name = f"{ROLE_PREFIXES[role][0]}IDENTITY"
        identity = env.get(name)
        if not identity:
            continue  # role@host:pid, distinct by construction
        other = seen.setdefault(identity.casefold(), role)
        if other != role:
            raise DevError(
                f"the {role} and the {other} would both run as {identity!r}; give each role an "
                f"identity of its own ({name})"
            )
