"""``landed dev --reload``: the act modules are found on the actor's path without importing
them, and a real ``landed dev --reload`` (examples/first_task's dev.sh) runs a changed act on
the next task after restarting the actor alone; an act that no longer imports is said, and
the next save brings the actor back. A changed source in landed.toml restarts the verifier
alone."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.examples import FREE_PORTS, user_env

from landed.dev.reload import act_modules, find_module_files
from landed.dev.server import DevError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT.parent / "examples" / "first_task"
BIN = Path(sys.executable).parent


def test_act_modules_are_found_without_importing_them(tmp_path: Path) -> None:
    (tmp_path / "flat_acts.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "more.py").write_text("")
    found = find_module_files(["flat_acts", "pkg.sub.more", "pkg"], [str(tmp_path)])
    assert found == {
        (tmp_path / "flat_acts.py").resolve(): False,
        (tmp_path / "pkg" / "sub" / "more.py").resolve(): False,
        (tmp_path / "pkg").resolve(): True,
    }
    assert "flat_acts" not in sys.modules and "pkg" not in sys.modules


def test_a_module_not_on_the_actors_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(DevError, match=r"act module 'nowhere\.acts' .* not found"):
        find_module_files(["nowhere.acts"], [str(tmp_path)])


def test_the_act_modules_are_read_as_the_actor_reads_them() -> None:
    assert act_modules({"LANDED_ACTOR_ACTS": "a, b.c"}) == ["a", "b.c"]
    assert act_modules({"LANDED_ACTOR_ACTS": '["a", "b"]'}) == ["a", "b"]
    assert act_modules({}) == []


def _env() -> dict[str, str]:
    return {**user_env(), **FREE_PORTS}


@pytest.fixture
def reloading(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Path, queue.Queue[dict[str, Any]]]]:
    """examples/first_task's dev.sh under --reload; its folder and its stdout's JSON events.
    An indirect parameter is a landed.toml written in the folder before the start."""
    folder = tmp_path / "first_task"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("shop", ".landed"))
    toml = getattr(request, "param", None)
    if toml is not None:
        (folder / "landed.toml").write_text(toml.format(folder=folder))
    err = (tmp_path / "dev.err").open("wb")
    dev = subprocess.Popen(
        [str(folder / "dev.sh"), "--headless", "--port", "0", "--json", "--reload"],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        cwd=tmp_path,
        env=_env(),
    )
    events: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        assert dev.stdout is not None
        for line in dev.stdout:
            events.put(json.loads(line))
        events.put({"event": "ended"})

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield folder, events
    finally:
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()
        reader.join(timeout=10)
        assert dev.stdout is not None
        dev.stdout.close()
        err.close()


def _next(events: queue.Queue[dict[str, Any]], folder: Path) -> dict[str, Any]:
    try:
        event = events.get(timeout=120)
    except queue.Empty:
        pytest.fail("landed dev printed nothing within 120 s")
    assert event["event"] != "ended", (folder.parent / "dev.err").read_text()[-3000:]
    return event


def _submit(folder: Path, temporal: str, batch: int) -> dict[str, Any]:
    spec = json.loads((folder / "task.json").read_text())
    spec["task_id"] = f"reload-{batch}"
    spec["act"]["input"]["batch"] = batch
    spec["proof_plan"][0]["probe"]["params"] = [batch]
    (folder / f"task-{batch}.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [str(BIN / "landed"), "submit", f"task-{batch}.json", "--wait", "--json"],
        cwd=folder,
        env={**_env(), "TEMPORAL_ADDRESS": temporal},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.stdout, done.stderr[-3000:]
    receipt: dict[str, Any] = json.loads(done.stdout)["receipt"]
    return receipt


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_changed_act_runs_on_the_next_task_after_the_actor_alone_restarts(
    reloading: tuple[Path, queue.Queue[dict[str, Any]]],
) -> None:
    folder, events = reloading
    ready = _next(events, folder)
    assert ready["event"] == "ready"
    pids = {role: w["pid"] for role, w in ready["workers"].items()}
    first = _submit(folder, ready["temporal"], 21)
    assert first["verdict"] == "verified" and first["report"] == "added 3 orders"

    acts = folder / "shop_acts.py"
    good = acts.read_text()
    acts.write_text(good + "\nthis is not python\n")
    failed = _next(events, folder)
    assert failed["event"] == "reload_failed" and failed["changed"] == ["shop_acts.py"]
    assert "fix it and save again" in failed["message"]

    # One row short, and a report that says so: the next task runs this act.
    changed = good.replace('range(input["count"])', 'range(input["count"] - 1)')
    changed = changed.replace('f"added {len(rows)} orders"', 'f"added {len(rows)} orders, v2"')
    assert changed.count("v2") == 1 and "- 1" in changed
    acts.write_text(changed)
    reloaded = _next(events, folder)
    assert reloaded["event"] == "reloaded" and reloaded["changed"] == ["shop_acts.py"]
    assert reloaded["pid"] != pids["actor"]

    second = _submit(folder, ready["temporal"], 22)
    assert second["report"] == "added 2 orders, v2"
    assert second["verdict"] != "verified"
    # Only the actor restarted: the verifier and the runner are the processes of the start.
    for role in ("verifier", "runner"):
        os.kill(pids[role], 0)
    log = (folder / ".landed" / "logs" / "actor.log").read_text()
    assert log.count('"event": "ready"') == 2  # the first run's lines are kept


_TOML = """\
[sources.notes]
kind = "file"
path = "{folder}"

[runner]
time_cap = "PT10M"
"""


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("reloading", [_TOML], indirect=True)
def test_a_changed_source_in_landed_toml_restarts_the_verifier_alone(
    reloading: tuple[Path, queue.Queue[dict[str, Any]]],
) -> None:
    folder, events = reloading
    ready = _next(events, folder)
    assert ready["event"] == "ready"
    pids = {role: w["pid"] for role, w in ready["workers"].items()}
    home = folder / ".landed"
    copy = home / "verifier" / "landed.toml"
    # The verifier is given its part only: the runner's table stays out of its copy.
    assert "notes" in copy.read_text() and "time_cap" not in copy.read_text()

    toml = folder / "landed.toml"
    toml.write_text(toml.read_text() + f'\n[sources.more]\nkind = "file"\npath = "{folder}"\n')
    reloaded = _next(events, folder)
    assert reloaded["event"] == "reloaded" and reloaded["role"] == "verifier", reloaded
    assert reloaded["changed"] == ["sources.more"] and "landed.toml" in reloaded["why"]
    assert reloaded["pid"] != pids["verifier"]
    assert "more" in copy.read_text()

    # Only the verifier restarted: the actor and the runner are the processes of the start.
    for role in ("actor", "runner"):
        os.kill(pids[role], 0)
        log = (home / "logs" / f"{role}.log").read_text()
        assert log.count('"event": "ready"') == 1, role
    log = (home / "logs" / "verifier.log").read_text()
    assert log.count('"event": "ready"') == 2
    second = _submit(folder, ready["temporal"], 23)
    assert second["verdict"] == "verified", second
