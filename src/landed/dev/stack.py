"""``landed dev``: Temporal's dev server plus the three worker roles, each its own process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from landed.dev.roles import (
    ROLE_PREFIXES,
    RoleProcess,
    actor_pass_env,
    distinct_identities,
    role_env,
)
from landed.dev.server import NO_PROFILE_FILE, DevError, DevServer
from landed.util.confine import undumpable

if TYPE_CHECKING:
    from landed.temporal.client import Client

__all__ = ["DevStack"]


@dataclass
class DevStack:
    """Dev server + actor + verifier + runner; ``home`` holds the db, ledger, keys and logs.

    Each role runs in its own working directory, ``home/actor``, ``home/verifier`` and
    ``home/runner``; the signing key (``home/keys``) and the ledger (``home/ledger.db``) lie
    outside the actor's, and the actor is given no path to either. Its environment carries its
    own ``LANDED_ACTOR_*``, what a process needs to run and the variables named in
    LANDED_ACTOR_PASS_ENV; its HOME is ``home/actor`` unless HOME is named there, so files
    such as ~/.pgpass or ~/.aws are not found for it by the libraries it uses. All roles run
    as the same user: the verifier, the runner and this process make themselves undumpable, and
    the actor confines itself with Landlock away from ``home`` (landed.util.confine); where the
    kernel has no Landlock, act code that goes looking can read the others' files. A fleet runs
    each role under its own account (or Deployment), where the key and the ledger credentials
    are not readable by the actor at all. Relative paths in a role's settings
    (``sqlite:///rel.db``) resolve against that role's directory.
    """

    home: Path = field(default_factory=lambda: Path(".landed"))
    in_memory: bool = False
    headless: bool = False
    port: int = 0
    ui_port: int = 0
    env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    base_env: Mapping[str, str] | None = None
    cwd: Path | None = None
    server: DevServer | None = None
    roles: dict[str, RoleProcess] = field(default_factory=dict)
    #: Each role's part of landed.toml as last handed to it (``--reload`` compares against it).
    file_parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: IO[str] | None = field(default=None, repr=False)

    @property
    def ledger_url(self) -> str:
        return f"sqlite:///{(self.home / 'ledger.db').resolve()}"

    def keys(self) -> tuple[Path, Path]:
        """The verifier's key pair under ``home/keys`` (made once, reused after)."""
        return self._key_pair(self.home / "keys")

    def head_keys(self) -> tuple[Path, Path]:
        """The runner's chain-head key pair under ``home/head-keys`` (made once, reused after):
        its own, apart from the verifier's, which the runner never holds.
        ``landed ledger verify --trust home/head-keys`` checks the heads it signed."""
        return self._key_pair(self.home / "head-keys")

    @staticmethod
    def _key_pair(directory: Path) -> tuple[Path, Path]:
        from landed.signing import KeyPair

        existing = sorted(directory.glob("landed-*.key")) if directory.is_dir() else []
        if existing:
            return existing[0].resolve(), existing[0].with_suffix(".pub").resolve()
        private, public = KeyPair.generate().save(directory)
        return private.resolve(), public.resolve()

    def role_environment(self, role: str) -> dict[str, str]:
        assert self.server is not None
        private, public = self.keys()
        head_key, _ = self.head_keys()
        base = dict(os.environ if self.base_env is None else self.base_env)
        defaults: dict[str, dict[str, str]] = {
            "actor": {},
            "verifier": {"LANDED_VERIFIER_SIGNING_KEY": str(private)},
            "runner": {
                "LANDED_RUNNER_TRUST": str(public),
                "LANDED_RUNNER_HEAD_KEY": str(head_key),
                "LANDED_RUNNER_LEDGER_URL": base.get("LANDED_RUNNER_LEDGER_URL")
                or base.get("LANDED_LEDGER_URL")
                or self.ledger_url,
            },
        }
        approvers = self.home / "approvers"
        if approvers.is_dir() and any(approvers.glob("*.pub")):
            # The approvers' public keys (approver-NAME-ID.pub); without any, nothing held can
            # be approved.
            defaults["runner"]["LANDED_RUNNER_APPROVERS"] = str(approvers.resolve())
        # Roles no longer run in the caller's directory: keep its modules importable for the
        # actor's acts (``python -m`` used to put it on sys.path) and its landed.toml for the
        # verifier's sources.
        origin = (self.cwd or Path.cwd()).resolve()
        if role == "actor":
            path = [str(origin), *filter(None, [base.get("PYTHONPATH")])]
            defaults["actor"]["PYTHONPATH"] = os.pathsep.join(path)
            # Libraries read credentials from files under HOME without being asked (libpq's
            # .pgpass, cloud SDKs' config): the actor's home is its own directory.
            if "HOME" not in actor_pass_env({**base, **dict(self.env.get("actor", {}))}):
                defaults["actor"]["HOME"] = str(self.role_dir("actor"))
            defaults["actor"].update(self._actor_confinement())
        defaults[role].update(self._file_settings(role, base, origin))
        if base.get("LANDED_LOG_FORMAT"):
            # Roles get no unprefixed landed setting: the format goes under the role's name.
            defaults[role][f"LANDED_{role.upper()}_LOG_FORMAT"] = base["LANDED_LOG_FORMAT"]
        # One build at a time on a server that outlives upgrades of landed (temporal.db):
        # unversioned, so a restart on a new version is served at once (no promotion).
        defaults[role][f"LANDED_{role.upper()}_VERSIONING"] = "false"
        extra = {**defaults[role], **dict(self.env.get(role, {}))}
        return role_env(role, base=base, temporal_address=self.server.address, extra=extra)

    def _file_settings(self, role: str, base: Mapping[str, str], origin: Path) -> dict[str, str]:
        """The role's part of ``landed.toml`` in the folder landed dev started in: the actor's
        and the runner's tables as their variables (the shell's win), the verifier's part as a
        copy in its own directory (landed.dev.settings_file)."""
        from landed.dev.settings_file import FILE_NAME, read_parts, role_variables, write_toml

        path = origin / FILE_NAME
        part = read_parts(path)[role] if path.is_file() else {}
        self.file_parts[role] = part
        if role != "verifier":
            return {k: v for k, v in role_variables(role, part).items() if k not in base}
        copy = self.role_dir("verifier") / FILE_NAME
        if not part or "LANDED_CONFIG_FILE" in base:
            copy.unlink(missing_ok=True)  # the verifier reads its directory's landed.toml too
            return {}
        return {"LANDED_CONFIG_FILE": str(write_toml(part, copy))}

    def _actor_confinement(self) -> dict[str, str]:
        """The actor's Landlock policy keeps it out of this home (keys, ledger, Temporal's
        database) and gives it a temp dir of its own inside its directory: the shell's /tmp
        may hold this very home (landed.util.confine_policy)."""
        tmp = self.role_dir("actor") / "tmp"
        tmp.mkdir(exist_ok=True)
        deny = [self.home.resolve()]
        # Another stack's home in the project (`landed dev`'s .landed beside the demo's
        # .landed/demo) holds keys too.
        dot = (self.cwd or Path.cwd()).resolve() / ".landed"
        if dot.is_dir() and dot not in deny:
            deny.append(dot)
        return {"LANDED_ACTOR_DENY_PATHS": os.pathsep.join(map(str, deny)), "TMPDIR": str(tmp)}

    async def client(self) -> Client:
        """A landed client of the embedded server (your Temporal profile file does not apply)."""
        from landed.temporal.client import Client
        from landed.temporal.plugin import connect, worker_identity

        assert self.server is not None
        temporal = await connect(
            identity=worker_identity("client"), address=self.server.address, env=NO_PROFILE_FILE
        )
        return Client(temporal)

    def role_dir(self, role: str) -> Path:
        """The role's own working directory, ``home/<role>`` (made on first use)."""
        directory = (self.home / role).resolve()
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    async def start(self, timeout: float = 60.0) -> DevStack:
        self.home.mkdir(parents=True, exist_ok=True)
        self._lock_home()
        # This process holds every role's environment: unreadable to the actor's acts.
        undumpable()
        self.server = DevServer(
            db_file=None if self.in_memory else (self.home / "temporal.db").resolve(),
            port=self.port,
            ui_port=self.ui_port,
            headless=self.headless,
            log_file=self.home / "logs" / "temporal.log",
        )
        try:
            await self._start_server(self.server)
            envs = {role: self.role_environment(role) for role in ROLE_PREFIXES}
            # A settings mistake stops the stack before any role starts; so do two roles on
            # one queue (an actor there would receive reads, a verifier acts).
            distinct_identities(envs)
            queues: dict[str, str] = {}
            for role, env in envs.items():
                name = f"{ROLE_PREFIXES[role][0]}TASK_QUEUE"
                queue = env.get(name) or f"landed-{role}"
                if queue in queues:
                    raise DevError(
                        f"the {role} and the {queues[queue]} would share the task queue "
                        f"{queue!r}; give each role a queue of its own "
                        f"({name})"
                    )
                queues[queue] = role
            for role in ("runner", "verifier", "actor"):
                self.start_role(role)
            for proc in self.roles.values():
                await proc.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    async def _start_server(server: DevServer) -> None:
        """Start the server on a thread; cancelled (Ctrl-C while starting), stop it and wait
        for that thread, so nothing it starts is left running behind the cancelled start."""
        starting = asyncio.ensure_future(asyncio.to_thread(server.start))
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            await asyncio.to_thread(server.stop, 5.0)  # its wait sees the server gone
            with contextlib.suppress(BaseException):
                await starting
            raise

    def start_role(self, role: str, *, append: bool = False) -> RoleProcess:
        """Start ``role`` (stopping its running process first); ``append``: its log keeps the
        earlier run's lines (``landed dev --reload``)."""
        old = self.roles.get(role)
        if old is not None:
            old.stop(grace=self._stop_grace(role))
        proc = RoleProcess(
            role=role,
            env=self.role_environment(role),
            log_file=self.home / "logs" / f"{role}.log",
            cwd=self.role_dir(role),
            append=append,
        ).start()
        self.roles[role] = proc
        return proc

    def addresses(self) -> dict[str, Any]:
        assert self.server is not None
        return {
            "temporal": self.server.address,
            "web_ui": self.server.ui_address,
            "temporal_metrics": self.server.metrics_address,
            "namespace": "default",
            "ledger": (self.roles["runner"].ready or {}).get("ledger", self.ledger_url)
            if "runner" in self.roles
            else self.ledger_url,
            "db": str(self.server.db_file) if self.server.db_file else None,
            "head_keys": str(self.head_keys()[1].parent),
            "logs": str((self.home / "logs").resolve()),
            "workers": {
                role: {
                    "pid": p.pid,
                    "identity": (p.ready or {}).get("identity"),
                    "task_queue": (p.ready or {}).get("task_queue"),
                    "metrics": (p.ready or {}).get("metrics"),
                }
                for role, p in self.roles.items()
            },
        }

    def dead_role(self, ignore: Collection[str] = ()) -> str | None:
        """The first process that exited: a role, or "temporal"; roles in ``ignore`` (the
        actor while ``--reload`` restarts it) are not looked at."""
        for role, proc in self.roles.items():
            if role in ignore:
                continue
            if proc.proc is not None and proc.proc.poll() is not None:
                return role
        server = self.server.proc if self.server is not None else None
        if server is not None and server.poll() is not None:
            return "temporal"
        return None

    def _lock_home(self) -> None:
        """Hold ``home/dev.lock`` for the life of the stack: a second stack on the same home
        would start a second server on the same SQLite file (the two take each other's
        shards) and write over the first's logs."""
        if self._lock is not None:
            return
        import fcntl

        path = self.home / "dev.lock"
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise DevError(
                f"another landed dev ({holder}) is running on {self.home.resolve()}; stop it "
                "(Ctrl-C in its terminal) or give this one its own --dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self._lock = handle

    def stop(self) -> None:
        # Workers first (they finish in-flight tasks and stop polling), then the server.
        for proc in self.roles.values():
            if proc.proc is not None and proc.proc.poll() is None:
                proc.proc.send_signal(signal.SIGTERM)
        for role, proc in self.roles.items():
            # A role that never said it was ready has no task in flight to finish (it may
            # still be importing the acts): no drain to wait for.
            proc.stop(
                grace=self._stop_grace(role) if proc.ready is not None else 5.0, signalled=True
            )
        if self.server is not None:
            self.server.stop()
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock
            self._lock = None

    def _stop_grace(self, role: str) -> float:
        """How long a role may take to stop: the actor drains its acts in flight first."""
        if role != "actor":
            return 10.0
        base = os.environ if self.base_env is None else self.base_env
        raw = dict(self.env.get("actor", {})).get(
            "LANDED_ACTOR_GRACEFUL_SHUTDOWN_S", base.get("LANDED_ACTOR_GRACEFUL_SHUTDOWN_S", "30")
        )
        try:
            return max(float(raw), 0.0) + 10.0
        except ValueError:
            return 40.0
