"""A probe names its source; a URL, DSN or path in its place is refused before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import landed
from landed.probes.contract import RecordProbe, probe_problem, source_problem
from landed.task.spec import TaskSpecError
from landed.task.validate import check_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "task.json"
DSN = "postgresql://agent:s3cret-canary@db.internal/orders"


def _task(source: str) -> dict[str, Any]:
    task: dict[str, Any] = json.loads(EXAMPLE.read_text())
    task["proof_plan"][0]["probe"]["source"] = source
    return task


@pytest.mark.parametrize("name", ["orders-db", "site", "db.replica_2", "A1"])
def test_names_are_sources(name: str) -> None:
    assert source_problem(name) is None
    assert probe_problem(RecordProbe(source=name, query="select 1")) is None


@pytest.mark.parametrize(
    "source", [DSN, "https://api.example.com/v1", "/var/lib/orders.db", "../db", "a b", "-x", ""]
)
def test_anything_else_is_refused_without_quoting_it(source: str) -> None:
    why = source_problem(source)
    assert why is not None and "LANDED_SOURCES__NAME__URL" in why
    assert source == "" or source not in why
    assert "s3cret-canary" not in why


def test_submit_check_names_the_field_and_never_the_dsn() -> None:
    with pytest.raises(TaskSpecError) as caught:
        check_spec(_task(DSN))
    assert caught.value.problems[0][0] == "proof_plan.0.probe"
    assert "URL or DSN" in str(caught.value) and "s3cret-canary" not in str(caught.value)


class _NoTemporal:
    """Stands in for a Temporal client: a refused task must never reach one."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the client reached Temporal ({name}) for a refused task")


async def test_client_start_refuses_before_reaching_temporal() -> None:
    client = landed.Client(_NoTemporal(), task_queue="landed-runner")  # type: ignore[arg-type]
    with pytest.raises(TaskSpecError, match=r"proof_plan\.0\.probe"):
        await client.start(_task(DSN))


@pytest.mark.slow
def test_landed_submit_exits_3_and_never_connects(tmp_path: Path) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps(_task(DSN)))
    # An address nothing listens on: a submit that tried to connect would exit 1, not 3.
    done = subprocess.run(
        [sys.executable, "-m", "landed", "submit", str(task), "--address", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "proof_plan.0.probe" in done.stderr and "s3cret-canary" not in done.stderr
