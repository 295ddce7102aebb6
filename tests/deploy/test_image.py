"""The worker image: hadolint-clean, and the commands it runs work (outside a container: no
container daemon runs here, so the image's entrypoint is run from the installed landed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from helpers.k8s import ROOT, containers, docs, render, tool, workloads

from landed.signing import KeyPair

pytestmark = pytest.mark.slow

DOCKERFILE = ROOT / "Dockerfile"


def _instruction(name: str, stage: str) -> list[str]:
    found = re.findall(rf"^{name} (\[.*\])$", stage, re.M)
    assert len(found) == 1, f"one {name} in the runtime stage"
    return list(json.loads(found[0]))


def _runtime_stage() -> str:
    text = DOCKERFILE.read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    assert len(stages) == 2, "a build stage and a runtime stage"
    assert " AS build" in stages[0].splitlines()[0]
    return stages[1]


def test_hadolint_is_clean() -> None:
    out = subprocess.run(
        [tool("hadolint"), "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_runtime_stage_has_no_compiler_and_no_root() -> None:
    stage = _runtime_stage()
    assert "gcc" not in stage and "apt-get" not in stage
    user = re.findall(r"^USER (\S+)$", stage, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The entrypoint as the image has it, from this environment's installed landed.
    entry, *rest = _instruction("ENTRYPOINT", _runtime_stage())
    return subprocess.run(
        [tool(entry), *rest, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env},
    )


def test_the_image_command_runs() -> None:
    cmd = _instruction("CMD", _runtime_stage())
    assert cmd == ["worker", "actor"]
    out = _run([*cmd, "--help"], {})
    assert out.returncode == 0, out.stderr
    assert "Run one worker role" in out.stdout


def _pod_env(role: str) -> dict[str, str]:
    """The environment the dev overlay gives the role's container (Secrets as committed)."""
    objs = docs(render("dev"))
    pod = next(p for r, p in workloads(objs) if r == role)
    main = containers(pod)[-1]
    env = {e["name"]: e["value"] for e in main.get("env", []) if "value" in e}
    data = {
        o["metadata"]["name"]: {**o.get("data", {}), **o.get("stringData", {})}
        for o in objs
        if o["kind"] in ("Secret", "ConfigMap")
    }
    for src in main.get("envFrom", []):
        ref = src.get("secretRef") or src["configMapRef"]
        env.update(data[ref["name"]])
    # What the operator sets per release (the committed placeholder is refused: see
    # tests/deploy/test_k8s_versioning.py).
    env["LANDED_BUILD_ID"] = "2026.12.02-0a1b2c3"
    return env


def test_the_actor_pod_passes_its_settings_check() -> None:
    out = _run(["worker", "actor", "--check"], _pod_env("actor"))
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert view["event"] == "checked" and view["role"] == "actor"


def test_the_settings_check_refuses_a_leaked_secret() -> None:
    env = {**_pod_env("actor"), "LANDED_RUNNER_LEDGER_URL": "postgresql://w@db/landed"}
    out = _run(["worker", "actor", "--check"], env)
    assert out.returncode == 3
    assert "LANDED_RUNNER_LEDGER_URL" in out.stderr


def test_the_verifier_pod_checks_its_key(tmp_path: Path) -> None:
    env = _pod_env("verifier")
    out = _run(["worker", "verifier", "--check"], env)
    assert out.returncode == 3, "the committed placeholder key is refused"
    key, _ = KeyPair.generate().save(tmp_path / "keys")
    out = _run(["worker", "verifier", "--check"], {**env, "LANDED_VERIFIER_SIGNING_KEY": str(key)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["key_id"] == KeyPair.load(key).key_id
