"""The scale-out bench at a tiny size: its report's shape, every task settled verified exactly
once, and no process of it left running. No timing is asserted (a shared 2-core machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the bench package lives beside src/, not installed

from bench._scale_report import Step  # noqa: E402


def _bench(
    *args: str, timeout: float = 400, temporal: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env.update(temporal or {})
    return subprocess.run(
        [sys.executable, "-m", "bench.scale_out", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _alive(pid: int) -> bool:
    """Whether ``pid`` is still one of the bench's processes (not gone, not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z" and (b"landed" in cmdline or b"temporal" in cmdline)


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_scale_out_reports_every_step_with_every_task_verified() -> None:
    done = _bench("--procs", "2", "--tasks", "6", "--concurrency", "3", "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["bench"] == "scale_out"
    assert report["temporal"] == "dev server"
    assert report["all_settled_verified"] is True
    steps = report["steps"]
    # N=1 is always the baseline, then every role at 2, then one role at a time.
    assert [s["name"] for s in steps] == [
        "all x1",
        "all x2",
        "actor x2",
        "verifier x2",
        "runner x2",
    ]
    assert steps[1]["processes"] == {"actor": 2, "verifier": 2, "runner": 2}
    assert steps[4]["processes"] == {"actor": 1, "verifier": 1, "runner": 2}
    assert steps[0]["ratio_to_n1"] == 1.0
    for step in steps:
        assert step["tasks"] == step["settled_verified"] == 6, step["not_verified"]
        assert step["not_verified"] == {}
        assert set(step["cpu_ms_per_task"]) == {"actor", "verifier", "runner", "client", "server"}
        # Every role and the server did work in the window: a figure read from a process that
        # did not run the tasks (a wrong pid) would show zero for its role.
        assert all(step["cpu_s"][k] > 0 for k in ("runner", "server")), step["cpu_s"]
        assert 0 < step["server_share"] < 1
        assert 0 <= step["machine_busy"] <= 1 and 0 <= step["others_share"] <= 1
        assert step["rate"] > 0 and step["ratio_to_n1"] > 0 and step["ceiling"] > 0
        assert len(step["pids"]["actor"]) == step["processes"]["actor"]
    assert [m["name"] for m in report["medians"]] == [s["name"] for s in steps]
    assert report["rounds"] == 1
    pids = {p for step in steps for procs in step["pids"].values() for p in procs}
    assert not [pid for pid in pids if _alive(pid)], "the bench left processes running"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_scale_out_runs_against_an_existing_temporal_from_its_env_config(temporal_dev: str) -> None:
    """``--temporal env``: the roles and the client connect where Temporal's environment
    configuration points (here the session's dev server, standing in for a cluster), and the
    server's CPU is reported as not measured rather than as zero."""
    temporal = {"TEMPORAL_ADDRESS": temporal_dev, "TEMPORAL_NAMESPACE": "default"}
    done = _bench("--temporal", "env", "--procs", "1", "--tasks", "3", "--json", temporal=temporal)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["temporal"] == temporal_dev
    [step] = report["steps"]
    assert step["settled_verified"] == step["tasks"] == 3
    assert "server" not in step["cpu_ms_per_task"] and step["server_share"] is None
    assert "server" not in step["pids"]


def test_bad_process_counts_are_refused_with_the_fix() -> None:
    done = _bench("--procs", "two", timeout=60)
    assert done.returncode == 2
    assert "--procs 'two'" in done.stderr and "e.g. 1,2,4" in done.stderr


def test_a_task_counts_as_verified_only_when_the_ledger_and_the_act_agree() -> None:
    outcome = {"a": "verified", "b": "verified", "c": "not_done"}
    settled = {"a": "verified", "b": "2 receipts in the ledger", "c": "settled not_done"}
    cpu = {"actor": 0.1, "verifier": 0.2, "runner": 0.3, "client": 0.1, "server": 0.3}
    step = Step.of("all x1", {}, outcome, settled, 1.5, cpu, (2.0, 4.0), 0.0)
    assert step.settled_verified == 1
    assert step.not_verified == {"b": "2 receipts in the ledger", "c": "not_done"}
    assert step.server_share == 0.3
    assert step.machine_busy == 0.5
    assert step.others_share == 0.5  # 2.0 s busy, 1.0 s of it the bench's
    assert step.cpu_ms_per_task["runner"] == 100.0
    assert step.ceiling == round((os.cpu_count() or 1) * 3 / 1.0, 1)  # 3 tasks, 1 cpu s


async def test_a_role_process_that_exits_stops_the_step_with_its_log(tmp_path: Path) -> None:
    """A role that dies mid-step ends the step at once, naming it and quoting its log, instead
    of leaving its tasks to wait out the step's limit."""
    import asyncio

    from bench._scale_fleet import Fleet
    from bench.scale_out import _watched
    from landed.dev.roles import RoleProcess

    log = tmp_path / "runner-1.log"
    log.write_text("starting\nledger unreachable: connection refused\n")
    # A real process that already exited stands in for the crashed runner.
    crashed = subprocess.Popen([sys.executable, "-c", "raise SystemExit(4)"])
    crashed.wait(timeout=30)
    fleet = Fleet(stack=None)
    fleet.procs["runner"] = [RoleProcess("runner", {}, log, proc=crashed)]

    async def forever() -> dict[str, str]:
        await asyncio.Event().wait()
        return {}

    with pytest.raises(RuntimeError, match=r"runner process .* status 4") as caught:
        await asyncio.wait_for(_watched(fleet, forever()), 30)
    assert "ledger unreachable" in str(caught.value)
