"""The stop request every long-running command honours: SIGINT (Ctrl-C) or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["stop_requested"]

_STOP = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_requested() -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM while the block runs, on the running loop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in _STOP:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in _STOP:
            loop.remove_signal_handler(sig)
