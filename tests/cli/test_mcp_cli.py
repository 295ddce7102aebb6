"""``landed mcp`` as a command: with no Temporal to reach it says so and how to fix it, on
stderr, and leaves stdout (the protocol's channel under stdio) empty."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_landed_mcp_without_temporal_exits_1_naming_the_fix() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    run = [sys.executable, "-m", "landed", "mcp", "--address", address]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""
    assert f"cannot reach Temporal at {address}" in out.stderr
    assert "landed dev" in out.stderr


@pytest.mark.slow
def test_landed_mcp_over_http_refuses_an_address_beyond_loopback() -> None:
    run = [sys.executable, "-m", "landed", "mcp", "--transport", "streamable-http"]
    out = subprocess.run(
        [*run, "--host", "0.0.0.0", "--address", f"127.0.0.1:{_closed_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2, out.stderr
    assert "not a loopback address" in out.stderr and "--allow-remote" in out.stderr
