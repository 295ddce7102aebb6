"""Child processes that stop when the process that started them dies (Linux's PDEATHSIG)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["stop_with_parent"]

_PR_SET_PDEATHSIG = 1
_prctl: Any = None
# Not Linux: no prctl; a child of a killed parent runs on and is stopped by hand.
with contextlib.suppress(OSError, AttributeError):
    _prctl = ctypes.CDLL(None, use_errno=True).prctl


def stop_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None]:
    """A Popen ``preexec_fn``: the child gets ``sig`` when the thread that started it dies.

    A parent killed with SIGKILL runs no cleanup, so without this its children run on,
    orphaned. The parent's pid is taken before the fork, so a parent that died before the
    child armed this is caught too. Only the child itself is signalled, not what it starts.
    """
    parent = os.getpid()

    def arm() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return arm
