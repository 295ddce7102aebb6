"""examples/guard runs as its README says: guard.sh blocks (exit 2) while examples/first_task
has not landed, and lets the turn end (exit 0, the expected line) once its run.py did, on a
real `landed dev`; an order written twice blocks it again."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from helpers.examples import EXAMPLES, copy_example, example_stack, user_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _guard(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tmp_path / "guard" / "guard.sh")],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_guard_passes_only_once_the_first_task_landed(tmp_path: Path) -> None:
    copy_example("guard", tmp_path)
    with example_stack("first_task", tmp_path) as first_task:
        before = _guard(tmp_path)
        assert before.returncode == 2, before.stderr
        assert "1 of 2 completion contract(s) did not land" in before.stderr
        assert "line 1 (add 3 orders of batch 7): empty under count(3)" in before.stderr
        run = first_task.run("python", "run.py")
        assert run.returncode == 0, run.stderr[-3000:]
    after = _guard(tmp_path)
    assert (after.returncode, after.stdout) == (
        0,
        (EXAMPLES / "guard" / "expected_output.txt").read_text(),
    )
    with sqlite3.connect(first_task.folder / "shop" / "orders.db") as db:
        db.execute("insert into orders values (7, 0)")  # line 0 of batch 7 twice (and 4 rows)
    twice = _guard(tmp_path)
    assert twice.returncode == 2 and "2 of 2 completion contract(s) did not land" in twice.stderr
