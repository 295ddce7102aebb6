"""`landed reconcile` without --json says DONE or NOT DONE for each settled claim, with the
verdict behind it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from landed.cli.reconcile import _say


@pytest.mark.parametrize(
    ("done", "verdict", "shown"),
    [(True, "reconciled", "DONE (reconciled)"), (False, "planned", "NOT DONE (planned)")],
)
def test_a_settled_claim_reads_done_or_not_done(
    done: bool, verdict: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    event = {
        "event": "settled",
        "line": 3,
        "task_id": "order-7",
        "attempt": 1,
        "existing": False,
        "verdict": verdict,
        "done": done,
    }
    _say(Console(file=io.StringIO()), event, quiet=False)
    assert capsys.readouterr().out == f"line 3: order-7 attempt 1: {shown}\n"
