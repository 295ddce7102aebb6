"""Probes on this machine: ``command`` (a real subprocess), ``file`` and ``git``."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

from landed.probes.contract import CommandProbe, FileProbe, GitProbe
from landed.probes.fetch import _unavailable, fetch
from landed.probes.process import ProcessResult, run_process
from landed.probes.reading import Capture, Limits, ProbeError, Reading
from landed.probes.settings import SourceConfig
from landed.probes.sources import SourceRegistry

__all__ = [
    "PASSED_ENV",
    "ProcessResult",
    "open_below",
    "read_command",
    "read_file",
    "read_git",
    "run_process",
    "scrubbed_env",
]

#: The only variables a probe process inherits from the verifier's environment; everything
#: else (tokens, DSNs, cloud credentials) stays out unless a source or the probe sets it.
PASSED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


def scrubbed_env(probe_env: dict[str, str], cfg: SourceConfig | None) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(probe_env)
    if cfg is not None:  # the verifier's own settings win over what a probe asks for
        env.update({k: v.get_secret_value() for k, v in cfg.env.items()})
    return env


async def read_command(
    probe: CommandProbe, cfg: SourceConfig | None, registry: SourceRegistry, limits: Limits
) -> Reading:
    argv = ["/bin/sh", "-c", probe.argv[0]] if probe.shell else list(probe.argv)
    cwd = probe.cwd
    held: int | None = None
    if cfg is not None and probe.cwd is not None and registry.task_probes:
        held = open_below(cfg.path or os.getcwd(), probe.cwd)
        # The process enters the directory this reader opened, through the descriptor, which
        # the child still holds when it changes directory (descriptors close after, at exec):
        # a symlink swapped in after the check cannot lead it anywhere else. /proc/self, not
        # this pid: in another pid namespace that number can be another process.
        cwd = f"/proc/self/fd/{held}"
    elif cfg is not None and cfg.path:
        cwd = str(Path(cfg.path) / probe.cwd) if probe.cwd else cfg.path
    try:
        result = await run_process(argv, env=scrubbed_env(probe.env, cfg), cwd=cwd, limits=limits)
    finally:
        if held is not None:
            os.close(held)
    if result.returncode not in probe.ok_exit_codes:
        tail = result.stderr_tail()
        raise ProbeError(
            f"the command exited with code {result.returncode}"
            + (f"; stderr: {tail}" if tail else "; it printed nothing on stderr"),
            result.stdout,
        )
    return Reading(capture=result.stdout)


def open_below(root: str, relative: str) -> int:
    """A descriptor on the directory ``relative`` under a source's ``root``, reached one
    component at a time without following any symlink (the root itself is the operator's)."""
    if not Path("/proc/self/fd").is_dir():
        raise ProbeError(
            "a command probe's cwd needs /proc to be entered safely on this system; drop the "
            "cwd and give the source's path instead"
        )
    fd = -1
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        for part in Path(relative).parts:
            if part in (os.sep, "..") or os.sep in part:
                raise ProbeError(f"the probe's cwd {relative!r} must be a relative path below it")
            inner = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = inner
    except ProbeError:
        if fd >= 0:
            os.close(fd)
        raise
    except (OSError, ValueError) as exc:
        if fd >= 0:
            os.close(fd)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProbeError(
            f"the probe's cwd {relative!r} is not a directory below the source's {root!r} "
            f"reached without symlinks ({why}); give a real directory under it"
        ) from None
    return fd


def _read_file_sync(
    path: Path, keep: int, limits: Limits, deadline: float, root: Path | None = None
) -> tuple[Reading, int] | str:
    try:
        # Not blocking: a FIFO put where the file was expected must not hold the read.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return f"no file at {path}"
    except OSError as exc:
        raise ProbeError(f"could not open {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProbeError(f"{path} is not a regular file")
        # Checked on what was opened, not on the name before it: a symlink swapped in between
        # the check and the open would otherwise read a file outside the root.
        if root is not None:
            opened = _opened_path(fd)
            if opened is None:
                # Without /proc the open file's path cannot be known: not read, rather than
                # read from wherever a swapped symlink led.
                raise ProbeError(
                    f"cannot confirm that {path} lies under the source's root: /proc is not "
                    "mounted in the verifier's environment; mount it"
                )
            if not opened.is_relative_to(root):
                raise ProbeError(f"{path} leads outside the source's root")
    except BaseException:
        os.close(fd)
        raise
    capture = Capture(keep=keep, limit=limits.read_limit)
    try:
        with os.fdopen(fd, "rb") as fh:
            while chunk := fh.read(1024 * 1024):
                if not capture.feed(chunk):
                    break
                if time.monotonic() > deadline:
                    raise ProbeError(
                        f"reading {path} did not finish within {limits.timeout_s}s", capture
                    )
    except OSError as exc:
        raise ProbeError(f"could not read {path}: {exc.strerror or exc}") from None
    # The file's size as read, or as the file system has it where the read stopped at the limit
    # (the count stops there too).
    return Reading(capture=capture), (info.st_size if capture.over_limit else capture.total)


def _opened_path(fd: int) -> Path | None:
    """The real path of an open file, where /proc can say."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


async def read_file(
    probe: FileProbe, cfg: SourceConfig | None, registry: SourceRegistry, limits: Limits
) -> Reading:
    if cfg is not None:
        if not cfg.path:
            raise ProbeError(f"file source {probe.source!r} has no path (its root directory)")
        root = Path(cfg.path).resolve()
        relative = Path(probe.path)
        if relative.is_absolute():
            raise ProbeError(f"{probe.path!r} is absolute; give a path under the source's root")
        try:
            path = (root / relative).resolve()
        except RuntimeError:  # Python 3.11 raises it for a symlink loop
            raise ProbeError(
                f"{probe.path!r} leads into a symlink loop under the source's root"
            ) from None
        if not path.is_relative_to(root):
            raise ProbeError(f"{probe.path!r} leads outside the source's root")
    else:
        path = Path(probe.path)
    keep = min(probe.max_bytes or limits.read_cap, limits.read_cap)
    deadline = time.monotonic() + limits.timeout_s
    root_dir = Path(cfg.path).resolve() if cfg is not None and cfg.path else None
    got = await asyncio.to_thread(_read_file_sync, path, keep, limits, deadline, root_dir)
    if isinstance(got, str):
        return Reading(capture=Capture(), missing=True, note=got)
    reading, size = got
    if probe.size is not None:
        if size == probe.size:
            reading.checked_claims.append(f"size {size}")
        else:
            reading.failed_claims.append(f"the file is {size} bytes; claimed {probe.size}")
    if probe.sha256 is not None:
        digest = reading.capture.sha256
        if reading.capture.over_limit:
            reading.failed_claims.append(
                f"the file is larger than {limits.read_limit} bytes; not hashed"
            )
        elif digest == probe.sha256.lower():
            reading.checked_claims.append(f"sha256 {digest}")
        else:
            reading.failed_claims.append(
                f"the file has sha256 {digest}; claimed {probe.sha256.lower()}"
            )
    return reading


async def read_git(
    probe: GitProbe, cfg: SourceConfig | None, registry: SourceRegistry, limits: Limits
) -> Reading:
    if probe.pull_request_url is not None:
        if cfg is not None and cfg.kind != "http":
            # Fetched without an http source, the URL would be read as an unsourced one (any
            # host), past the allow_unsourced setting that let only configured sources be read.
            raise ProbeError(
                f"a pull_request_url is read over HTTP, and source {probe.source!r} is a "
                f"{cfg.kind} source; name an http source whose base URL holds the pull request"
            )
        got = await fetch(
            registry, probe.source if cfg else None, cfg, probe.pull_request_url, limits
        )
        if got.status in (404, 410):
            return Reading(
                capture=got.capture, missing=True, note=f"HTTP {got.status}: no pull request there"
            )
        problem = _unavailable(got.status)
        if problem is not None:
            raise ProbeError(f"GET {probe.pull_request_url}: {problem}", got.capture)
        reading = Reading(capture=got.capture)
        if not 200 <= got.status < 300:
            reading.failed_claims.append(f"the pull request URL answered HTTP {got.status}")
        return reading
    assert probe.ref is not None
    if cfg is not None and cfg.kind != "git":
        raise ProbeError(f"source {probe.source!r} is not a git repository source")
    repo = cfg.path if cfg is not None and cfg.path else os.getcwd()
    env = scrubbed_env(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            # The repository is the agent's: its own config must not run anything here, and
            # the probe must not write to it. A partial clone would fetch a missing commit
            # (through core.sshCommand, a remote helper) into .git and then find it; no
            # protocol is allowed, whatever the repository's config allows.
            "GIT_ALLOW_PROTOCOL": "none",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            # refs/replace/<sha> would make a commit that was never made resolve.
            "GIT_NO_REPLACE_OBJECTS": "1",
        },
        cfg,
    )
    argv = [
        "git",
        # Reading the index (a ":path" ref) would run the repository's fsmonitor command.
        "-c",
        "core.fsmonitor=false",
        "-C",
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        f"{probe.ref}^{{commit}}",
    ]
    result = await run_process(argv, env=env, cwd=None, limits=limits)
    if result.returncode == 1:
        return Reading(
            capture=result.stdout, missing=True, note=f"no commit or ref {probe.ref!r} in {repo}"
        )
    if result.returncode != 0:
        raise ProbeError(
            f"git could not read {repo} (exit {result.returncode}): {result.stderr_tail()}"
        )
    sha = result.stdout.data.decode("ascii", errors="replace").strip()
    return Reading(capture=result.stdout, value=sha)
