"""``landed check`` counts a ledger export once per task, by its latest row, as the board does;
any other JSONL is counted line by line, as before."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from landed.receipts.check import check_stream
from landed.receipts.intake import InvalidLine
from landed.receipts.scorecard import Scorecard


def row(task_id: str, lifecycle: str | None, attempt: int = 1, **changes: Any) -> dict[str, Any]:
    """A receipt as the runner settles it (or its recheck appends it): lifecycle None is a line
    from outside the ledger (no ``landed.lifecycle``)."""
    landed: dict[str, Any] = {"attempt": attempt}
    if lifecycle is not None:
        landed["lifecycle"] = lifecycle
    body: dict[str, Any] = {
        "task_id": task_id,
        "claimed_status": "done",
        "report": "Inserted the rows.",
        "proof": [
            {
                "kind": "http_contains",
                "ref": "https://example.com/pricing",
                "expect": "Team plan",
                "checked_by": "verifier-1",
                "result": "pass",
            }
        ],
        "cost": {"usd": 0.5},
        "verdict": "verified",
        "verdict_by": "runner-1",
        "landed": landed,
    }
    body.update(changes)
    return body


def reversed_row(task_id: str, attempt: int = 1) -> dict[str, Any]:
    gone = row(task_id, "reversed", attempt, verdict="reversed")
    gone["proof"][0]["result"] = "mismatch"
    return gone


def not_done(task_id: str, attempt: int = 1) -> dict[str, Any]:
    failed = row(task_id, "verified", attempt, verdict="executed")
    failed["proof"][0]["result"] = "mismatch"
    return failed


class _Sink:
    def task(self, line: int, record: Any, graded: Any) -> None:
        pass

    def invalid(self, item: InvalidLine) -> None:
        raise AssertionError(item)


def card(*rows: dict[str, Any], trust: bool = False) -> Scorecard:
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    # trust: the full pydantic path (landed check --trust), with every signature refused.
    check = (lambda receipt, proof: False) if trust else None
    return check_stream(io.BytesIO(data), _Sink(), signature_ok=check)


def figures(c: Scorecard) -> tuple[int, int, int, int, float | None]:
    return (c.settled, c.done_claimed, c.done_proven, c.reversed, c.cost_usd)


@pytest.mark.parametrize("trust", [False, True])
def test_a_settle_row_and_its_confirmation_count_one_task_verified(trust: bool) -> None:
    once = card(row("t1", "verified"), row("t1", "confirmed"), trust=trust)
    assert figures(once) == (1, 1, 1 if not trust else 0, 0, 0.5)
    if not trust:
        assert once.proof_rate == 1.0


@pytest.mark.parametrize("trust", [False, True])
def test_a_settle_row_and_its_reversal_count_one_task_not_done(trust: bool) -> None:
    gone = card(row("t1", "verified"), reversed_row("t1"), trust=trust)
    assert figures(gone) == (1, 1, 0, 1, 0.5)
    assert gone.proof_rate == 0.0


def test_attempts_count_once_by_the_latest_attempt() -> None:
    # Attempt 1 not done, attempt 2 verified then confirmed: one task, verified.
    retried = card(not_done("t1", 1), row("t1", "verified", 2), row("t1", "confirmed", 2))
    assert figures(retried) == (1, 1, 1, 0, 0.5)
    # Attempt 2 verified then reversed; a later line of attempt 1 does not undo the latest.
    late = card(row("t1", "verified", 2), reversed_row("t1", 2), row("t1", "verified", 1))
    assert figures(late) == (1, 1, 0, 1, 0.5)


def test_tasks_of_a_ledger_export_beside_other_lines_each_count() -> None:
    mixed = card(
        row("t1", "verified"),
        row("loose", None),
        row("t2", "verified"),
        row("t1", "confirmed"),
        reversed_row("t2"),
        {"id": "log-1", "status": "done"},
    )
    # t1 verified, t2 reversed, the two lines from outside the ledger as they are.
    assert figures(mixed) == (4, 4, 2, 1, 1.5)


def test_lines_without_lifecycles_are_counted_line_by_line_as_before() -> None:
    # Not a ledger export: the same task id on three lines is three claims, as it always was.
    plain = card(row("t1", None), row("t1", None), row("t1", None, verdict="reversed"))
    assert figures(plain) == (3, 3, 2, 1, 1.5)
    # A lifecycle a runner never stores ("pending") is not a ledger row either.
    assert card(row("t1", "pending"), row("t1", "pending")).settled == 2


_SPLIT = """
import os, sys
from landed.receipts.check import split_point
from landed.cli.check import run_check
path, out_path = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
assert split_point(fd, 1) is not None, "the split path must run here"
os.close(fd)
with open(out_path, "w") as out:
    sys.exit(run_check(path, as_json=True, out=out, split_min_bytes=1))
"""


def test_a_task_split_across_two_processes_counts_once(tmp_path: Path) -> None:
    """A file large enough is graded in two processes: a settle row in the first half and its
    reversal in the second are still one task, not done."""
    rows = [row(f"t{i}", "verified") for i in range(40)]
    rows += [reversed_row("t0"), row("t1", "confirmed")]
    path = tmp_path / "export.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-c", _SPLIT, str(path), str(out)], capture_output=True, check=False
    )
    assert proc.returncode == 1, proc.stderr.decode()  # a reversed row is a done claim missed
    scorecard = orjson.loads(out.read_bytes())["scorecard"]
    assert (scorecard["settled"], scorecard["done_proven"], scorecard["reversed"]) == (40, 39, 1)
    one = card(*rows)
    assert (one.settled, one.done_proven, one.reversed) == (40, 39, 1)
