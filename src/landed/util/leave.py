"""Leaving a process that used the Temporal SDK.

Such a process can crash in interpreter teardown after all its work succeeded: the SDK's
runtime threads may still hold Python thread states while the interpreter finalizes
(sdk-python#300, ``PyGILState_Release``, exit status -6). The only sure way out is to flush
what was printed and skip teardown with ``os._exit``. The CLI leaves this way, and a user's
script does the same through :func:`run_main`."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Coroutine
from typing import Any, NoReturn

__all__ = ["leave", "run_main", "status_of"]


def status_of(exc: SystemExit) -> int:
    """The exit status ``sys.exit(code)`` asks for, as the interpreter would compute it."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints the message and exits 1
    return 1


def leave(status: int) -> NoReturn:
    """Flush stdout and stderr, then end the process with ``status`` without teardown."""
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream: nothing more can be said on it
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def run_main(main: Coroutine[Any, Any, object]) -> NoReturn:
    """Run a script's ``main()`` coroutine like :func:`asyncio.run`, then leave the process
    through :func:`leave`: status 0, the status of a ``sys.exit``, 130 on Ctrl-C, or 1 with
    the traceback printed when ``main`` raised.

    Use it as the last line of a script that talks to landed::

        landed.run_main(main())
    """
    import asyncio  # here: every CLI command leaves through leave(), few need asyncio

    try:
        asyncio.run(main)
    except SystemExit as exc:
        leave(status_of(exc))
    except KeyboardInterrupt:
        leave(130)
    except BaseException:  # shown in full, as the interpreter would, and still leaving cleanly
        traceback.print_exc()
        leave(1)
    leave(0)
