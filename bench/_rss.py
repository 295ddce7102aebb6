"""Resident memory of processes and their children, sampled from /proc in a thread of its own
(the bench's event loop is busy with thousands of tasks; a sample must not wait on it)."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from pathlib import Path

#: Megabytes of 10^6 bytes: the target's unit read strictly (a MiB would allow 4.9% more).
MB = 1_000_000


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (all its threads'), from /proc; none when it is gone."""
    kids: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids.extend(int(k) for k in (task / "children").read_text().split())
    except OSError:
        pass
    return kids


def _tree(pid: int) -> list[int]:
    """``pid`` and every process under it: a role that forks (a probe's command, an act's
    subprocess) is counted with its children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def _status_kb(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/PID/status (VmRSS, VmHWM); 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def rss_mb(pid: int, children: bool = True) -> float:
    """VmRSS of ``pid`` and (unless ``children`` is False) its children, in MB."""
    return sum(_status_kb(p, "VmRSS") for p in (_tree(pid) if children else [pid])) * 1024 / MB


def hwm_mb(pid: int) -> float:
    """The kernel's high-water mark of ``pid``'s own resident set since it started (VmHWM), in
    MB: a check on the sampled peak, which can miss a spike shorter than its interval."""
    return _status_kb(pid, "VmHWM") * 1024 / MB


class Peaks:
    """Samples each named process every ``interval`` seconds and keeps its highest RSS; ``take``
    returns the peaks since the last take (one phase of the bench) and starts afresh. The
    processes named in ``alone`` are sampled without their children."""

    def __init__(
        self, pids: Mapping[str, int], interval: float = 0.2, alone: Collection[str] = ()
    ) -> None:
        self._pids = dict(pids)
        self._alone = set(alone)
        self._interval = interval
        self._lock = threading.Lock()
        self._peaks: dict[str, float] = {}
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            now = {
                name: rss_mb(pid, children=name not in self._alone)
                for name, pid in self._pids.items()
            }
            with self._lock:
                self._samples += 1
                for name, mb in now.items():
                    self._peaks[name] = max(mb, self._peaks.get(name, 0.0))

    def take(self) -> tuple[dict[str, float], int]:
        """The peak per process since the last take, and how many samples it came from."""
        with self._lock:
            peaks, samples = self._peaks, self._samples
            self._peaks, self._samples = {}, 0
        return peaks, samples
