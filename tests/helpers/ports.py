"""Ports for servers a test stops and starts again on the same address."""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["steady_port"]

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def steady_port(host: str = "127.0.0.1") -> int:
    """A free port below the kernel's ephemeral range. While a server on an ephemeral port is
    down, a client reconnecting to it can be handed that very port as its own source port (a TCP
    self-connect) and hold it, so the server cannot bind it again; a port below the range is
    never handed out that way."""
    low = int(_RANGE.read_text().split()[0]) if _RANGE.exists() else 32768
    for _ in range(200):
        port = random.randrange(10_000, low)
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between 10000 and {low} on {host}")
