"""The processes of the scale-out bench: N ``landed worker ROLE`` processes per role on one
Temporal server, started and stopped between steps, and the CPU each of them spends.

Every process of a role gets the same environment ``landed dev`` gives that role (the same task
queue, keys, ledger and sources), so the N processes of a role share its queue the way the
replicas of a Deployment do, each under its own identity (role@host:pid).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from landed.dev.roles import RoleProcess
from landed.dev.server import DevServer

ROLES = ("actor", "verifier", "runner")
# Each process of a role would bind the same metrics/health port: the bench binds nothing but
# the dev server's loopback ports, so these settings of the caller's shell are left out.
_UNBOUND = ("_METRICS_PORT", "_METRICS_HOST")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores, from /proc/stat:
    the other load of a shared machine shows as busy time no process of the bench spent."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already counted in user
    return (total - idle) / tick, total / tick


@dataclass
class Fleet:
    """The role processes of one bench run.

    ``stack`` supplies each role's environment and working directory (a ``DevStack`` whose
    ``server`` is set, started or not); ``external`` replaces the Temporal settings it gives
    with the caller's own (Temporal's environment configuration: address, namespace, TLS, API
    key, profile), for a run against an existing cluster.
    """

    stack: Any
    external: bool = False
    procs: dict[str, list[RoleProcess]] = field(default_factory=lambda: {r: [] for r in ROLES})
    _started: int = 0

    def env(self, role: str) -> dict[str, str]:
        env = {
            k: v for k, v in self.stack.role_environment(role).items() if not k.endswith(_UNBOUND)
        }
        if self.external:
            env = {k: v for k, v in env.items() if not k.upper().startswith("TEMPORAL_")}
            env.update({k: v for k, v in os.environ.items() if k.upper().startswith("TEMPORAL_")})
        return env

    def counts(self) -> dict[str, int]:
        return {role: len(procs) for role, procs in self.procs.items()}

    async def scale(self, counts: Mapping[str, int], timeout: float = 120.0) -> None:
        """Start or stop processes until each role runs ``counts[role]``, then wait until every
        new one polls (its ready line)."""
        extra: list[RoleProcess] = []
        new: list[RoleProcess] = []
        for role in ROLES:
            have = self.procs[role]
            while len(have) > counts[role]:
                extra.append(have.pop())
            while len(have) < counts[role]:
                self._started += 1
                proc = RoleProcess(
                    role=role,
                    env=self.env(role),
                    log_file=self.stack.home / "logs" / f"{role}-{self._started}.log",
                    cwd=self.stack.role_dir(role),
                ).start()
                have.append(proc)
                new.append(proc)
        await asyncio.to_thread(_stop_all, extra)
        await asyncio.gather(*(proc.wait_ready(timeout) for proc in new))

    def dead(self) -> str | None:
        """A role process that exited while it should serve: which, and the end of its log."""
        for role, procs in self.procs.items():
            for proc in procs:
                if proc.proc is not None and proc.proc.poll() is not None:
                    tail = proc.log_file.read_text(errors="replace").splitlines()[-15:]
                    return (
                        f"a {role} process (pid {proc.pid}) exited with status "
                        f"{proc.proc.returncode} during the run; the end of its log:\n"
                        + "\n".join(tail)
                    )
        return None

    def pids(self) -> dict[str, list[int]]:
        return {role: [p.pid for p in procs] for role, procs in self.procs.items()}

    def ledger_url(self) -> str:
        ready = self.procs["runner"][0].ready if self.procs["runner"] else None
        if not ready or "ledger" not in ready:
            raise RuntimeError("no runner has said which ledger it writes")
        return str(ready["ledger"])

    def stop(self) -> None:
        _stop_all([p for procs in self.procs.values() for p in procs])
        self.procs = {r: [] for r in ROLES}


def _stop_all(procs: list[RoleProcess]) -> None:
    """SIGTERM every process at once, then wait for each (an idle actor drains at once)."""
    for proc in procs:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.terminate()
    for proc in procs:
        proc.stop(grace=40.0, signalled=True)


def dev_server(home: Path) -> DevServer:
    """The dev server ``landed dev`` runs: loopback, a SQLite file in WAL mode, landed's search
    attributes and dynamic config (``DevServer``'s defaults)."""
    return DevServer(
        db_file=(home / "temporal.db").resolve(),
        headless=True,
        log_file=home / "logs" / "temporal.log",
    )
