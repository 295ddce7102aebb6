"""On one machine, act code in the actor cannot read the other roles: `landed dev`'s three
role processes, and an act that goes looking for the verifier's and the runner's environment,
the keys, the ledger and Temporal's database (landed.util.confine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.sor import make_rows_db, rows_task

from landed.dev.stack import DevStack
from landed.util import landlock

TESTS = Path(__file__).parents[1]

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(landlock.abi() == 0, reason="this kernel offers no Landlock"),
]


def _stack(tmp_path: Path, db: Path) -> DevStack:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    base.update(
        {
            "LANDED_SOURCES__ROWS_DB__URL": f"sqlite:///{db}",
            "LANDED_ACTOR_CREDENTIALS": json.dumps({"rows-db": f"sqlite:///{db}"}),
            "LANDED_ACTOR_ACTS": "helpers.snoop_acts",
        }
    )
    return DevStack(
        home=tmp_path / ".landed",
        headless=True,
        base_env=base,
        env={"actor": {"PYTHONPATH": str(TESTS)}},
    )


def _snoop_task(task_id: str, db: Path, tries: dict[str, Any]) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=1, batch=task_id)
    task["act"] = {"name": "test.snoop", "input": {"batch": task_id, **tries}}
    return task


async def test_an_act_cannot_read_the_other_roles_the_keys_or_the_ledger(tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "sor" / "rows.db")
    stack = _stack(tmp_path, db)
    await stack.start()
    try:
        home = stack.home.resolve()
        key, _ = stack.keys()
        head_key, _ = stack.head_keys()
        pids = {role: proc.pid for role, proc in stack.roles.items()}
        ledger = Path(stack.ledger_url.removeprefix("sqlite:///"))
        tries = {
            "read": {
                "verifier_environ": f"/proc/{pids['verifier']}/environ",
                "runner_environ": f"/proc/{pids['runner']}/environ",
                "dev_parent_environ": f"/proc/{os.getpid()}/environ",
                "verifier_memory_map": f"/proc/{pids['verifier']}/maps",
                "signing_key": str(key),
                "head_key": str(head_key),
                "ledger": str(ledger),
                "temporal_db": str(home / "temporal.db"),
                "verifier_log": str(home / "logs" / "verifier.log"),
                # Controls: what the act may read, so a refusal above is not a broken probe.
                "own_environ": "/proc/self/environ",
                "own_database": str(db),
            },
            "write": {
                "planted_key": str(key.parent / "landed-0000.key"),
                "beside_ledger": str(ledger.parent / "forged.db"),
            },
            "signal": {"verifier": pids["verifier"]},
        }
        client = await stack.client()
        task_id = f"snoop-{uuid.uuid4().hex[:8]}"
        receipt = await client.run(_snoop_task(task_id, db, tries))
        got = json.loads(receipt.report or "{}")
    finally:
        stack.stop()
    assert receipt.verdict == "verified", receipt.landed
    controls = {k: got.pop(k) for k in ("own_environ", "own_database")}
    assert all(v.startswith("read ") for v in controls.values()), controls
    tried = [*tries["read"], *tries["write"], *tries["signal"]]
    assert got == {name: "refused: PermissionError" for name in tried if name not in controls}
    assert not (key.parent / "landed-0000.key").exists()
    assert not (ledger.parent / "forged.db").exists()
    actor_log = (home / "logs" / "actor.log").read_text()
    assert "landed worker actor: Landlock ABI" in actor_log, actor_log
    # The verifier and the runner made themselves undumpable: a process of the same user
    # that is not root cannot read their /proc files either, Landlock or not.
    for role in ("verifier", "runner"):
        log = (home / "logs" / f"{role}.log").read_text()
        assert f"landed worker {role}: undumpable" in log, log


def _actor(tmp_path: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    # Nothing listens there: each refusal below comes before any connection.
    env.update({"TEMPORAL_ADDRESS": "127.0.0.1:9", "TEMPORAL_CONFIG_FILE": os.devnull, **extra})
    return subprocess.run(
        [sys.executable, "-m", "landed", "worker", "actor"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_actor_that_could_write_beside_the_keys_does_not_start(tmp_path: Path) -> None:
    home = tmp_path / ".landed"
    (home / "keys").mkdir(parents=True)
    done = _actor(
        tmp_path,
        {
            "LANDED_ACTOR_DENY_PATHS": str(home),
            # The database beside the dev home: writing there would let acts plant a key.
            "LANDED_ACTOR_CREDENTIALS": json.dumps({"db": f"sqlite:///{tmp_path / 'app.db'}"}),
        },
    )
    assert done.returncode == 3, done.stderr
    assert f"the actor may write in {tmp_path.resolve()}, which holds {home.resolve()}" in (
        done.stderr
    )
    assert "keep what acts write in a directory of its own" in done.stderr
    bad = _actor(tmp_path, {"LANDED_ACTOR_CONFINE": "sometimes"})
    assert bad.returncode == 3, bad.stderr
    assert "LANDED_ACTOR_CONFINE='sometimes' is not a confinement mode" in bad.stderr
