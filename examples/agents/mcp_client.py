"""An MCP client runs a task through `landed mcp` and prints landed's verdict, not the act's
claim. With examples/first_task's ./dev.sh running: python mcp_client.py ../first_task/task.json"""

import os
import sys
from pathlib import Path

import mcp

import landed

# stdio: the client starts `landed mcp` itself, with this shell's settings (TEMPORAL_ADDRESS).
SERVER = mcp.StdioServerParameters(
    command=sys.executable, args=["-m", "landed", "mcp"], env=dict(os.environ)
)


async def main() -> None:
    spec = Path(sys.argv[1] if len(sys.argv) > 1 else "../first_task/task.json").read_text()
    async with mcp.Client(SERVER) as client:
        result = await client.call_tool("run", {"task_spec_json": spec, "timeout_s": 120})
    for part in result.content:
        print(getattr(part, "text", part))


landed.run_main(main())
