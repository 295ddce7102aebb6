"""``landed mcp``: landed as a Model Context Protocol server, for MCP clients (coding agents,
desktop chat apps) to submit tasks and read landed's verdicts."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys
from enum import StrEnum

import typer

from landed.cli.out import fail
from landed.cli.root import app

__all__ = ["mcp"]


class Transport(StrEnum):
    stdio = "stdio"
    streamable_http = "streamable-http"


async def _serve(
    transport: Transport,
    host: str,
    port: int,
    address: str | None,
    namespace: str | None,
    task_queue: str | None,
    owner: str,
    config: str | None,
) -> None:
    from landed.agents.mcp_server import serve
    from landed.agents.probe_read import ProbeReader
    from landed.agents.service import LandedTools
    from landed.temporal.client import Client

    client = await Client.connect(address, namespace=namespace, task_queue=task_queue)
    tools, probes = LandedTools(client, owner=owner), ProbeReader(config_file=config)
    await serve(tools, transport.value, host=host, port=port, probes=probes)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command("mcp")
def mcp(
    transport: Transport = typer.Option(
        Transport.stdio,
        "--transport",
        help="stdio (an MCP client starts `landed mcp`) or "
        "streamable-http (one server for several clients, on --host and --port).",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="streamable-http: the address. The server asks no client for credentials: an "
        "address other than loopback needs --allow-remote (put it behind your own auth).",
    ),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="streamable-http: serve on an address other than loopback."
    ),
    port: int = typer.Option(8000, "--port", help="streamable-http: the port."),
    address: str | None = typer.Option(
        None, "--address", help="Temporal host:port (default: TEMPORAL_ADDRESS)."
    ),
    namespace: str | None = typer.Option(
        None, "--namespace", help="Namespace (default: TEMPORAL_NAMESPACE)."
    ),
    task_queue: str | None = typer.Option(
        None, "--task-queue", help="The runner's task queue (default: LANDED_TASK_QUEUE)."
    ),
    owner: str = typer.Option(
        "mcp-client", "--as", help="Who the MCP client is, as approval requests name it."
    ),
    config: str | None = typer.Option(
        None, "--config", help="verify: landed.toml with the sources its probes may read."
    ),
) -> None:
    """Serve landed's tools to an MCP client: submit, status, receipt, run, held,
    request_approval and verify (one probe read now, from a source the configuration names,
    as the verifier worker reads). Each answer starts with DONE or NOT DONE and why. No tool
    approves: a held task waits for a person's `landed approve`.

    Exit codes: 0 the client left; 1 Temporal is unreachable; 2 the agents extra is missing, or
    a --host other than loopback without --allow-remote.
    """
    try:
        import landed.agents.mcp_server  # noqa: F401  (the `mcp` package, from the extra)
    except ImportError as exc:
        raise fail(
            f"landed mcp needs the MCP package ({exc}); install it with pip install "
            "'landed[agents]'",
            2,
        ) from None
    if transport is Transport.streamable_http and not (allow_remote or _loopback(host)):
        raise fail(
            f"--host {host} is not a loopback address, and the MCP server asks no client for "
            "credentials: anyone who reaches it could start tasks; serve on 127.0.0.1 behind "
            "your own authenticating proxy, or pass --allow-remote",
            2,
        )
    # Requests for approval are logged on stderr; stdout carries the protocol under stdio.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    try:
        asyncio.run(_serve(transport, host, port, address, namespace, task_queue, owner, config))
    except ConnectionError as exc:  # TemporalUnreachable: the message names the fix
        raise fail(str(exc), 1) from None
