"""deploy/k8s: every overlay renders, validates, lints, and keeps each role's secrets its own."""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from helpers.k8s import (
    K8S,
    OVERLAYS,
    ROOT,
    Doc,
    actor_egress_problems,
    containers,
    docs,
    render,
    separation_problems,
    temporal_credential_problems,
    tool,
    workloads,
)

pytestmark = pytest.mark.slow

# The oldest Kubernetes release the manifests are checked against (still supported upstream).
KUBERNETES_VERSION = "1.33.0"


@functools.cache
def rendered(overlay: str) -> str:
    return render(overlay)


def _generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates_strictly(overlay: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [tool("kubernetes-validate"), "--strict", "--quiet", "-k", KUBERNETES_VERSION, "-"],
        input=rendered(overlay),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_role_reads_only_its_own_secrets(overlay: str) -> None:
    objs = docs(rendered(overlay))
    assert {role for role, _ in workloads(objs)} == {"actor", "verifier", "runner", "exporter"}
    assert separation_problems(objs) == []
    assert actor_egress_problems(objs) == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_role_connects_to_temporal_with_a_credential_of_its_own(overlay: str) -> None:
    # On Temporal the credential is the identity: a role holding another's certificate or API
    # key can poll that role's queue and complete its activities.
    assert temporal_credential_problems(docs(rendered(overlay))) == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_temporal_credential_check_sees_a_shared_or_borrowed_secret(overlay: str) -> None:
    objs = docs(rendered(overlay))
    for borrowed in ("verifier", "runner"):
        leaky = copy.deepcopy(objs)
        actor = _find(leaky, "Deployment", "landed-actor")["spec"]["template"]["spec"]
        theirs = _find(leaky, "Deployment", f"landed-{borrowed}")["spec"]["template"]["spec"]
        # The actor's pod takes the other role's Temporal wiring whole (env and volumes).
        actor["volumes"] = theirs.get("volumes", [])
        actor["containers"][0]["env"] = theirs["containers"][0]["env"]
        actor["containers"][0]["volumeMounts"] = theirs["containers"][0]["volumeMounts"]
        found = temporal_credential_problems(leaky)
        name = f"landed-{borrowed}-temporal"
        assert f"actor connects to Temporal with Secret {name} of the {borrowed}" in found, found
        assert f"actor, {borrowed} share the Temporal credential {name}" in found, found
    # One key for all, in the ConfigMap every role reads.
    leaky = copy.deepcopy(objs)
    _find(leaky, "ConfigMap", "landed-temporal")["data"]["TEMPORAL_API_KEY"] = "k"
    found = temporal_credential_problems(leaky)
    assert "runner reads TEMPORAL_API_KEY from ConfigMap landed-temporal" in found, found
    # The actor without its own: no labelled Secret, no key, no certificate volume.
    leaky = copy.deepcopy(objs)
    _find(leaky, "Secret", "landed-actor-temporal")["metadata"]["labels"].clear()
    pod = _find(leaky, "Deployment", "landed-actor")["spec"]["template"]["spec"]
    mine = "landed-actor-temporal"
    pod["volumes"] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") != mine]
    pod["containers"][0]["env"] = [
        e for e in pod["containers"][0]["env"] if e["name"] != "TEMPORAL_API_KEY"
    ]
    found = temporal_credential_problems(leaky)
    assert found == ["actor connects to Temporal with no credential Secret of its own"], found


def _find(objs: list[Doc], kind: str, name: str) -> Doc:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def test_the_separation_check_sees_a_leak() -> None:
    objs = docs(rendered("dev"))
    for other in ("landed-verifier", "landed-verifier-signing-key", "landed-runner"):
        leaky = copy.deepcopy(objs)
        pod = _find(leaky, "Deployment", "landed-actor")["spec"]["template"]["spec"]
        pod["containers"][0]["envFrom"].append({"secretRef": {"name": other}})
        # The runner's Secret also puts its ledger URL in the actor's environment.
        found = separation_problems(leaky)
        assert f"actor reads Secret {other} of the {other.split('-')[1]}" in found, found
    leaky = copy.deepcopy(objs)
    _find(leaky, "Secret", "landed-actor")["stringData"]["LANDED_RUNNER_LEDGER_URL"] = "x"
    assert separation_problems(leaky) == ["actor's environment holds LANDED_RUNNER_LEDGER_URL"]
    leaky = copy.deepcopy(objs)
    db = {"podSelector": {"matchLabels": {"landed.dev/ledger-db": "true"}}}
    _find(leaky, "NetworkPolicy", "landed-actor")["spec"]["egress"].append({"to": [db]})
    assert len(actor_egress_problems(leaky)) == 1


def test_only_the_verifier_mounts_the_signing_key_and_only_the_runner_the_ledger() -> None:
    objs = docs(rendered("self-hosted"))
    for role, pod in workloads(objs):
        env = {e["name"] for c in containers(pod) for e in c.get("env", [])}
        assert ("LANDED_VERIFIER_SIGNING_KEY" in env) == (role == "verifier"), role
        assert ("LANDED_RUNNER_HEAD_KEY" in env) == (role == "runner"), role


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_are_locked_down_and_probed(overlay: str) -> None:
    objs = docs(rendered(overlay))
    drain = 0.0
    for role, pod in workloads(objs):
        assert pod["securityContext"]["runAsNonRoot"] is True, role
        assert pod["automountServiceAccountToken"] is False, role
        for c in containers(pod):
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, (role, c["name"])
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, (role, c["name"])
            assert {"cpu", "memory"} <= set(c["resources"]["limits"]), (role, c["name"])
        main = pod["containers"][0]
        if role != "exporter":
            assert main["livenessProbe"]["httpGet"]["path"] == "/healthz", role
            assert main["readinessProbe"]["httpGet"]["path"] == "/readyz", role
            assert main["args"] == ["worker", role]
            env = {e["name"]: e.get("value") for e in main["env"]}
            assert env[f"LANDED_{role.upper()}_METRICS_PORT"] == "9464"
        if role == "actor":
            drain = float(env["LANDED_ACTOR_GRACEFUL_SHUTDOWN_S"])
    for role, pod in workloads(objs):
        if role != "exporter":
            assert pod["terminationGracePeriodSeconds"] > drain, role
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objs}
    for name in ("landed-actor", "landed-verifier", "landed-runner", "landed-exporter"):
        assert {("ServiceAccount", name), ("PodDisruptionBudget", name)} <= kinds, name


def test_generated_files_are_current() -> None:
    gen = _generate()
    for name, make in gen.FILES.items():
        assert (K8S / "base" / name).read_text() == make(), (
            f"deploy/k8s/base/{name} is stale; run python deploy/k8s/generate.py"
        )
    rule: Doc = yaml.safe_load((K8S / "base" / "prometheusrule.yaml").read_text())
    source = yaml.safe_load((ROOT / "deploy" / "prometheus" / "landed-rules.yml").read_text())
    assert rule["spec"]["groups"] == source["groups"]
    board: Doc = yaml.safe_load((K8S / "base" / "dashboards.yaml").read_text())
    assert board["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert {k: json.loads(v) for k, v in board["data"].items()} == {
        p.name: json.loads(p.read_text()) for p in (ROOT / "dashboards").glob("*.json")
    }


def test_the_prometheus_rule_passes_promtool(tmp_path: Path) -> None:
    rule = next(o for o in docs(rendered("dev")) if o["kind"] == "PrometheusRule")
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    out = subprocess.run(
        [tool("promtool"), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_yamllint_is_clean() -> None:
    out = subprocess.run(
        [tool("yamllint"), "--strict", "-c", str(K8S / ".yamllint.yml"), str(K8S)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
