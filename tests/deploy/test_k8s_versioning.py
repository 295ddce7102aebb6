"""The manifests carry worker versioning: each role's pod names its Worker Deployment and a
build id the operator sets per release; a pod left with the placeholder refuses to start."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.k8s import OVERLAYS, containers, docs, render, workloads

from landed.temporal.versioning import PLACEHOLDER_BUILD_ID

pytestmark = pytest.mark.slow


def _env(pod: dict[str, object]) -> dict[str, str]:
    main = containers(pod)[-1]
    return {e["name"]: e["value"] for e in main.get("env", []) if "value" in e}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_role_names_its_deployment_and_build(overlay: str) -> None:
    roles = {role: _env(pod) for role, pod in workloads(docs(render(overlay)))}
    for role in ("actor", "verifier", "runner"):
        env = roles[role]
        assert env[f"LANDED_{role.upper()}_DEPLOYMENT_NAME"] == f"landed-{role}", role
        assert env["LANDED_BUILD_ID"] == PLACEHOLDER_BUILD_ID, role
        assert env.get(f"LANDED_{role.upper()}_VERSIONING", "true") != "false", role


def test_a_pod_with_the_placeholder_build_id_refuses_to_start() -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANDED_BUILD_ID": PLACEHOLDER_BUILD_ID,
    }
    out = subprocess.run(
        [sys.executable, "-m", "landed", "worker", "actor", "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 3, out.stdout + out.stderr
    assert "LANDED_BUILD_ID" in out.stderr and "placeholder" in out.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "landed", "worker", "actor", "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "LANDED_BUILD_ID": "2026.12.02-0a1b2c3"},
    )
    assert ok.returncode == 0, ok.stderr
