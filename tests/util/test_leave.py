"""`landed.run_main` leaves a script with the status its main asked for, after flushing what
it printed, and without interpreter teardown (where the Temporal SDK's threads can crash a
process whose work succeeded, sdk-python#300)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = """
import atexit, sys
import landed

atexit.register(lambda: print("teardown ran"))

async def main() -> None:
    print("printed, not yet flushed", end="")
    {body}

landed.run_main(main())
print("never reached")
"""


@pytest.mark.parametrize(
    ("body", "status", "err"),
    [
        ("pass", 0, ""),
        ("sys.exit(3)", 3, ""),
        ("sys.exit('a message')", 1, "a message"),
        ("raise KeyboardInterrupt", 130, ""),
        ("raise ValueError('the defect')", 1, "ValueError: the defect"),
    ],
)
def test_run_main_leaves_with_mains_status(body: str, status: int, err: str) -> None:
    script = textwrap.dedent(SCRIPT).replace("{body}", body)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status, done.stderr
    # flushed before leaving; no teardown (atexit) and nothing after run_main
    assert done.stdout == "printed, not yet flushed"
    assert err in done.stderr
