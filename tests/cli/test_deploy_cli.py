"""``landed deploy status|promote`` as an operator runs them: the installed command, another
process, against a dev server whose roles run versioned."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles

from landed.dev.server import free_port

ROLES = ("actor", "verifier", "runner")


async def _landed(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "landed",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _by_role(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["role"]: d for d in report["deployments"]}


@pytest.mark.slow
async def test_status_and_promote(temporal_dev: str, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    names = {r: f"landed-{r}-{tag}" for r in ROLES}
    env = {f"LANDED_{r.upper()}_DEPLOYMENT_NAME": n for r, n in names.items()}
    where = ["--address", temporal_dev]
    async with (
        run_roles(temporal_dev, tmp_path, versioning={**names, "build_id": "c1"}, tag=tag),
        run_roles(temporal_dev, tmp_path, versioning={**names, "build_id": "c2"}, tag=tag),
    ):
        code, out, err = await _landed("deploy", "status", "--json", *where, env=env)
        assert code == 0, err
        found = _by_role(json.loads(out))
        assert found["runner"]["deployment"] == names["runner"]
        assert found["runner"]["current"] == "c1" and found["runner"]["ramping"] is None
        assert [v["open_tasks"] for v in found["runner"]["versions"]] == [0, 0]
        assert [v["open_tasks"] for v in found["actor"]["versions"]] == [None, None]

        code, out, err = await _landed(
            "deploy", "promote", "c2", "--ramp", "10", "--role", "runner", *where, env=env
        )
        assert code == 0, err
        assert "ramping at 10%" in out
        code, out, _ = await _landed("deploy", "status", "--json", *where, env=env)
        found = _by_role(json.loads(out))
        assert (found["runner"]["ramping"], found["runner"]["ramp_percent"]) == ("c2", 10.0)
        assert found["actor"]["ramping"] is None  # --role runner: the others unchanged

        # An unknown build id changes no role, not even those that were checked first.
        code, out, err = await _landed("deploy", "promote", "c9", "--json", *where, env=env)
        assert code == 3, err
        assert json.loads(out)["error"] == "unknown build id"
        assert "known: c1, c2" in err

        code, out, err = await _landed("deploy", "promote", "c2", *where, env=env)
        assert code == 0, err
        code, out, _ = await _landed("deploy", "status", *where, env=env)
        assert code == 0
        assert "c2" in out and "current" in out
        code, out, _ = await _landed("deploy", "status", "--json", *where, env=env)
        assert {d["current"] for d in json.loads(out)["deployments"]} == {"c2"}


@pytest.mark.slow
async def test_a_ramp_outside_0_to_100_is_refused_before_connecting() -> None:
    code, out, err = await _landed(
        "deploy", "promote", "b1", "--ramp", "150", "--json", "--address", "127.0.0.1:1"
    )
    assert code == 2
    assert json.loads(out)["error"] == "usage"
    assert "0 to 100" in err


@pytest.mark.slow
async def test_an_unreachable_server_is_exit_4_not_an_empty_status() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    code, out, err = await _landed("deploy", "status", "--json", "--address", address)
    assert code == 4, err
    assert json.loads(out)["error"] == "temporal"
    assert "did not answer" in err
