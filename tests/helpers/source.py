"""``parse`` and ``parse_many``: ``ast.parse`` in a child interpreter.

CPython 3.11 keeps the AST converter's recursion counter in state shared by every thread
of a process, and 3.11's traceback printer calls ``ast.parse`` to place its carets. A
test that parses while any other thread of the test process prints a traceback (a
worker's log, asyncio's "exception was never retrieved" at collection) can fail with
"SystemError: AST constructor recursion depth mismatch". A child process has no other
thread; the trees come back pickled, and unpickling builds nodes without the converter.
"""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys

__all__ = ["parse", "parse_many"]

_CHILD = (
    "import ast, pickle, sys\n"
    "sources = pickle.load(sys.stdin.buffer)\n"
    "sys.stdout.buffer.write(pickle.dumps([ast.parse(s) for s in sources]))\n"
)


def parse_many(sources: list[str]) -> list[ast.Module]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD],
        input=pickle.dumps(sources),
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode:
        raise AssertionError(f"parsing in a child failed:\n{done.stderr.decode(errors='replace')}")
    trees: list[ast.Module] = pickle.loads(done.stdout)
    return trees


def parse(source: str) -> ast.Module:
    return parse_many([source])[0]
