"""landed as a Model Context Protocol server (``landed mcp``): an MCP client (a coding agent,
a desktop chat app) submits tasks and reads landed's verdicts, DONE or NOT DONE and why.

Seven tools: ``submit``, ``status``, ``receipt``, ``run``, ``held``, ``request_approval`` and
``verify`` (one probe read now, no task). There is no approve tool: an approval is a person's
decision, signed with their key (``landed approve``); an MCP client may only ask for one."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from landed.agents.probe_read import DEFAULT_CLAIM, ProbeReader
from landed.agents.service import DEFAULT_WAIT_S, AgentToolError, LandedTools

__all__ = ["TOOLS", "build_server", "serve"]

#: The tools the server offers, in the order it lists them.
TOOLS = ("submit", "status", "receipt", "run", "held", "request_approval", "verify")

_INSTRUCTIONS = (
    "landed runs an agent's task as an act, then reads the result back from the system where "
    "it lives and settles a verdict. Trust the first line of each answer (DONE or NOT DONE and "
    "why), not the act's own report. Only a person can approve a held task."
)


async def _answer(work: Awaitable[str]) -> str:
    """The tool's text, or a tool error carrying landed's words (never a crash)."""
    try:
        return await work
    except AgentToolError as exc:
        raise ToolError(str(exc)) from None


def build_server(tools: LandedTools, probes: ProbeReader | None = None) -> MCPServer[Any]:
    """An MCP server whose task tools answer through ``tools``, and whose ``verify`` reads
    through ``probes`` (by default the sources the environment and ``landed.toml`` name)."""
    server: MCPServer[Any] = MCPServer("landed", instructions=_INSTRUCTIONS)
    reader = probes or ProbeReader()

    @server.tool()
    async def submit(task_spec_json: str) -> str:
        """Submit a landed TaskSpec (JSON: task_id, owner, outcome, act, proof_plan) without
        waiting; returns its task id. The same task_id again attaches, it never acts twice."""
        return await _answer(tools.submit(task_spec_json))

    @server.tool()
    async def status(task_id: str) -> str:
        """Where a task stands: its step while it runs, its settled verdict once done."""
        return await _answer(tools.status(task_id))

    @server.tool()
    async def receipt(task_id: str) -> str:
        """A task's receipt: DONE or NOT DONE, why, its verdict and rung, and the receipt JSON."""
        return await _answer(tools.receipt(task_id))

    @server.tool()
    async def run(task_spec_json: str, timeout_s: float = DEFAULT_WAIT_S) -> str:
        """Submit a TaskSpec (JSON) and wait, at most timeout_s seconds, for its verdict."""
        return await _answer(tools.run(task_spec_json, timeout_s))

    @server.tool()
    async def held() -> str:
        """The tasks waiting for a person's approval, with who may approve each."""
        return await _answer(tools.held())

    @server.tool()
    async def request_approval(task_id: str, reason: str = "") -> str:
        """Ask for a person's approval of a held task: says who may approve and how, and logs
        the request. It never approves: only a person, with their signed key, can."""
        return await _answer(tools.request_approval(task_id, reason))

    @server.tool()
    async def verify(
        probe: dict[str, Any], expect: dict[str, Any] | None = None, action: str = DEFAULT_CLAIM
    ) -> str:
        """Run one probe now, with no task, and say whether what it returned is the claim:
        DONE or NOT DONE and why, then what it returned. probe: a landed probe (kind, source,
        and query/params, url or argv) naming a source the server's configuration holds;
        expect: one expectation (type, value), by default non_empty (weak: any output passes);
        action: the claim the probe checks, in words."""
        return await _answer(reader.verify(probe, expect, action))

    return server


async def serve(
    tools: LandedTools,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    probes: ProbeReader | None = None,
) -> None:
    """Serve the tools until the client leaves (stdio) or the process is stopped (HTTP)."""
    server = build_server(tools, probes)
    if transport == "stdio":
        await server.run_stdio_async()
    else:
        await server.run_streamable_http_async(host=host, port=port)
