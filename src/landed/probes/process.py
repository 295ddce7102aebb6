"""Run one probe process with bounded time and memory: own process group, no stdin, pipes
read by the event loop, exit seen through a pidfd (no waiter thread per process)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from landed.probes.reading import Capture, Limits, ProbeError

__all__ = ["ProcessResult", "run_process"]

# After the process exits, how long a child that kept its pipe open may take to let go.
_DRAIN_GRACE_S = 0.5
_STDERR_KEEP = 8 * 1024
# How much of the end of stderr a failure message quotes.
_TAIL_CHARS = 500
_CHUNK = 256 * 1024
# Without pidfd (not Linux >= 5.3) the exit is polled this often.
_POLL_S = 0.002


@dataclass
class ProcessResult:
    returncode: int
    stdout: Capture
    stderr: Capture

    def stderr_tail(self) -> str:
        """The end of stderr, where a failing command says why; "..." marks a cut, so that a
        secret cut there is still redacted by its remaining end."""
        text = self.stderr.data.decode("utf-8", errors="replace").strip()
        if len(text) > _TAIL_CHARS or not self.stderr.complete:
            return "..." + text[-_TAIL_CHARS:].lstrip()
        return text


class _Tail(Capture):
    """Counts and hashes every byte like Capture, and keeps the last ``keep`` bytes."""

    def __init__(self, keep: int, limit: int) -> None:
        super().__init__(keep=0, limit=limit)
        self._tail_keep = keep
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> bool:
        self._tail += chunk
        if len(self._tail) > self._tail_keep:
            del self._tail[: len(self._tail) - self._tail_keep]
        return super().feed(chunk)

    @property
    def data(self) -> bytes:
        return bytes(self._tail)

    @property
    def complete(self) -> bool:
        return self.total <= self._tail_keep


class _OverLimit(Exception):
    pass


def _reader(
    loop: asyncio.AbstractEventLoop, pipe: IO[bytes], capture: Capture
) -> asyncio.Future[None]:
    """Read ``pipe`` into ``capture`` whenever it is readable; the future ends at EOF."""
    done: asyncio.Future[None] = loop.create_future()
    fd = pipe.fileno()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            loop.remove_reader(fd)
            if not done.done():
                done.set_exception(exc)
            return
        if not chunk:
            loop.remove_reader(fd)
            if not done.done():
                done.set_result(None)
        elif not capture.feed(chunk):
            loop.remove_reader(fd)
            if not done.done():
                done.set_exception(_OverLimit())

    loop.add_reader(fd, readable)
    return done


def _exit_watch(
    loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]
) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A future that ends when ``proc`` exits, and a function that stops watching."""
    exited: asyncio.Future[None] = loop.create_future()

    def mark() -> None:
        if proc.poll() is not None and not exited.done():
            exited.set_result(None)

    pidfd_open = getattr(os, "pidfd_open", None)
    pidfd = -1
    if pidfd_open is not None:
        with contextlib.suppress(OSError):
            pidfd = pidfd_open(proc.pid)
    if pidfd >= 0:
        loop.add_reader(pidfd, mark)

        def stop() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)

        return exited, stop

    async def poll() -> None:
        while proc.poll() is None:
            await asyncio.sleep(_POLL_S)
        mark()

    poller = loop.create_task(poll())

    def stop_polling() -> None:
        poller.cancel()

    return exited, stop_polling


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_process(
    argv: list[str], *, env: dict[str, str], cwd: str | None, limits: Limits
) -> ProcessResult:
    """Run argv in its own process group with no stdin; on timeout kill the whole group.

    Output is hashed in full and kept up to ``limits.read_cap``; past ``limits.read_limit``
    the group is killed. Time and memory are bounded whatever the command prints.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.timeout_s
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError:
        if cwd is not None and not os.path.isdir(cwd):
            raise ProbeError(
                f"the working directory {cwd!r} does not exist; create it, or correct the "
                "source's path or the probe's cwd"
            ) from None
        raise ProbeError(f"no program {argv[0]!r} found on the probe's PATH") from None
    except OSError as exc:
        raise ProbeError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    out = Capture(keep=limits.read_cap, limit=limits.read_limit)
    err = _Tail(keep=_STDERR_KEEP, limit=limits.read_limit)
    readers = [_reader(loop, proc.stdout, out), _reader(loop, proc.stderr, err)]
    exited, stop_watch = _exit_watch(loop, proc)
    pending: set[asyncio.Future[Any]] = {*readers, exited}
    has_exited = False
    try:
        while pending:
            done, pending = await asyncio.wait(
                pending,
                timeout=max(0.0, deadline - loop.time()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not done:
                if has_exited:
                    break  # it exited; a lingering child holds the pipe: keep what was read
                raise ProbeError(
                    f"{argv[0]!r} did not finish within {limits.timeout_s}s; its process group "
                    "was killed",
                    out,
                )
            for task in done:
                problem = task.exception()
                if isinstance(problem, _OverLimit):
                    raise ProbeError(
                        f"{argv[0]!r} printed more than {limits.read_limit} bytes; it was killed "
                        "and nothing whole was read",
                        out,
                    )
                if problem is not None:
                    raise ProbeError(f"reading {argv[0]!r} failed: {problem}", out)
            if exited in done and not has_exited:
                has_exited = True
                deadline = min(deadline, loop.time() + _DRAIN_GRACE_S)
    finally:
        await _reap(loop, proc, readers, exited, stop_watch)
    code = proc.returncode
    return ProcessResult(code if code is not None else -1, out, err)


async def _reap(
    loop: asyncio.AbstractEventLoop,
    proc: subprocess.Popen[bytes],
    readers: list[asyncio.Future[None]],
    exited: asyncio.Future[None],
    stop_watch: Callable[[], None],
) -> None:
    # Kill the group even after a clean exit: nothing a probe started may outlive it.
    _kill_group(proc)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(ValueError, OSError):
                loop.remove_reader(pipe.fileno())
            pipe.close()
    for reader in readers:
        if not reader.done():
            reader.cancel()
        elif not reader.cancelled():
            reader.exception()  # retrieved, so asyncio does not log it as never retrieved
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), 2.0)
    stop_watch()
    if not exited.done():
        exited.cancel()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=0.1)  # reap the zombie
