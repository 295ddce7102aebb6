"""deploy/k8s/overlays/worker-controller: the Temporal Worker Controller's resources render,
meet the vendored CRDs, keep each role's secrets its own, and scale and sunset as landed needs."""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import subprocess
from datetime import timedelta
from types import ModuleType
from typing import Any

import pytest
import yaml
from helpers.crds import RULES, all_rules, problems
from helpers.k8s import (
    K8S,
    Doc,
    actor_egress_problems,
    containers,
    docs,
    render,
    secret_refs,
    separation_problems,
    temporal_credential_problems,
    tool,
)

from landed.task.canary import CanaryInput
from landed.task.names import ROLLOUT_GATE_WORKFLOW, SEARCH_ATTRIBUTES
from landed.task.spec import MAX_TIME_CAP
from landed.temporal.versioning import PLACEHOLDER_BUILD_ID

pytestmark = pytest.mark.slow

OVERLAY = "worker-controller"
ROLES = ("actor", "verifier", "runner")
KUBERNETES_VERSION = "1.33.0"


@functools.cache
def objs() -> list[Doc]:
    return docs(render(OVERLAY))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_ctl", K8S / "generate_controller.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kind(kind: str) -> list[Doc]:
    return [o for o in objs() if o["kind"] == kind]


def _one(kind: str, name: str, among: list[Doc] | None = None) -> Doc:
    return next(o for o in (among or objs()) if o["kind"] == kind and o["metadata"]["name"] == name)


def as_deployments(found: list[Doc]) -> list[Doc]:
    """Each WorkerDeployment as the Deployment the controller makes of it (its template, the
    labels a version's Deployment carries), beside everything else: what the other overlays'
    checks read."""
    out = []
    for o in found:
        if o["kind"] != "WorkerDeployment":
            out.append(o)
            continue
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": o["metadata"]["name"], "namespace": "landed"},
                "spec": {
                    "replicas": o["spec"].get("replicas", 1),
                    "selector": {"matchLabels": o["spec"]["template"]["metadata"]["labels"]},
                    "template": o["spec"]["template"],
                },
            }
        )
    return out


def test_generated_files_are_current() -> None:
    gen = _generator()
    for name, make in gen.FILES.items():
        assert (K8S / "overlays" / OVERLAY / name).read_text() == make(), (
            f"overlays/{OVERLAY}/{name} is stale; run python deploy/k8s/generate_controller.py"
        )


def test_every_role_has_a_connection_a_worker_deployment_and_an_hpa() -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objs()}
    for role in ROLES:
        name = f"landed-{role}"
        assert {("Connection", name), ("WorkerDeployment", name)} <= kinds, role
        assert ("WorkerResourceTemplate", f"{name}-hpa") in kinds, role
        # The controller makes the role's Deployments; the plain one is gone.
        assert ("Deployment", name) not in kinds, role
    assert ("Deployment", "landed-exporter") in kinds


def test_the_custom_resources_meet_the_vendored_crds() -> None:
    custom = [o for o in objs() if o["apiVersion"].startswith("temporal.io/")]
    assert len(custom) == 9
    assert [p for o in custom for p in problems(o)] == []


def test_every_cel_rule_of_the_crds_is_checked() -> None:
    assert all_rules() == set(RULES)


def test_the_crd_check_refuses_what_the_api_server_would() -> None:
    wd = _one("WorkerDeployment", "landed-runner")
    cases: list[tuple[str, str]] = [
        ("spec.rollout.steps.0.rampPercentage", "100 is greater than the maximum of 99"),
        ("spec.rollout.strategy", "'Fast' is not one of"),
        ("spec.rollout.steps.0.pauseDuration", "pause duration must be at least 30s"),
        ("spec.rollout.steps", "steps are required for Progressive rollout"),
        ("spec.rollout.gate.inputFrom", "exactly one of configMapKeyRef or secretKeyRef"),
        ("spec.workerOptions.connectionRef", "'connectionRef' is a required property"),
    ]
    values: list[Any] = [100, "Fast", "10s", [], {}, None]
    for (path, message), value in zip(cases, values, strict=True):
        bad = copy.deepcopy(wd)
        *parents, leaf = path.split(".")
        node: Any = bad
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is None:
            del node[leaf]
        else:
            node[int(leaf) if leaf.isdigit() else leaf] = value
        found = problems(bad)
        assert any(message in f for f in found), (path, found)
    conn = copy.deepcopy(_one("Connection", "landed-runner"))
    conn["spec"]["apiKeySecretRef"] = {"name": "landed-runner-temporal", "key": "k"}
    assert any("Only one of" in f for f in problems(conn))


def test_the_rest_validates_strictly_with_the_controllers_deployments_and_hpas() -> None:
    """Plain kinds as they are, each WorkerDeployment as its Deployment, each HPA template as
    the HPA the controller renders per version (its injected fields filled in)."""
    plain = [o for o in as_deployments(objs()) if not o["apiVersion"].startswith("temporal.io/")]
    for wrt in _kind("WorkerResourceTemplate"):
        hpa = copy.deepcopy(wrt["spec"]["template"])
        hpa["metadata"] = {"name": f"{wrt['metadata']['name']}-v1", "namespace": "landed"}
        ref = wrt["spec"]["workerDeploymentRef"]["name"]
        hpa["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": ref}
        plain.append(hpa)
    out = subprocess.run(
        [tool("kubernetes-validate"), "--strict", "--quiet", "-k", KUBERNETES_VERSION, "-"],
        input=yaml.safe_dump_all(plain),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_each_role_reads_only_its_own_secrets_and_temporal_credential() -> None:
    found = as_deployments(objs())
    assert separation_problems(found) == []
    assert actor_egress_problems(found) == []
    assert temporal_credential_problems(found) == []
    for role in ROLES:
        conn = _one("Connection", f"landed-{role}")
        assert conn["spec"]["mutualTLSSecretRef"]["name"] == f"landed-{role}-temporal"


def test_the_credential_checks_see_a_borrowed_secret() -> None:
    found = as_deployments(copy.deepcopy(objs()))
    actor = _one("Deployment", "landed-actor", found)["spec"]["template"]["spec"]
    for vol in actor["volumes"]:
        if vol.get("secret", {}).get("secretName") == "landed-actor-temporal":
            vol["secret"]["secretName"] = "landed-runner-temporal"
    assert "actor, runner share the Temporal credential landed-runner-temporal" in (
        temporal_credential_problems(found)
    )
    actor["containers"][0]["envFrom"].append({"secretRef": {"name": "landed-ledger-owner"}})
    assert "actor reads Secret landed-ledger-owner of the ledger-owner" in separation_problems(
        found
    )


def test_no_worker_holds_the_ledger_owner_or_the_temporal_operator() -> None:
    for wd in _kind("WorkerDeployment"):
        refs = secret_refs(wd["spec"]["template"]["spec"])
        assert not refs & {"landed-ledger-owner", "landed-temporal-operator"}, refs
    job = _one("Job", "landed-ledger-init")["spec"]["template"]["spec"]
    assert secret_refs(job) == {"landed-ledger-owner"}
    sa = _one("Job", "landed-search-attributes")["spec"]["template"]["spec"]
    assert secret_refs(sa) == {"landed-temporal-operator"}
    argv = sa["containers"][0]["args"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--name"] == list(SEARCH_ATTRIBUTES)


def test_pods_are_locked_down_and_probed() -> None:
    pods = [
        (
            wd["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"],
            wd["spec"]["template"]["spec"],
        )
        for wd in _kind("WorkerDeployment")
    ]
    pods += [("job", j["spec"]["template"]["spec"]) for j in _kind("Job")]
    for role, pod in pods:
        assert pod["securityContext"]["runAsNonRoot"] is True, role
        assert pod["automountServiceAccountToken"] is False, role
        for c in containers(pod):
            assert c["securityContext"]["readOnlyRootFilesystem"] is True, (role, c["name"])
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, (role, c["name"])
        if role != "job":
            main = pod["containers"][0]
            assert main["livenessProbe"]["httpGet"]["path"] == "/healthz", role
            assert main["readinessProbe"]["httpGet"]["path"] == "/readyz", role
            env = {e["name"]: e.get("value") for e in main["env"]}
            # The controller gives the build id (TEMPORAL_WORKER_BUILD_ID); no placeholder.
            assert "LANDED_BUILD_ID" not in env, role
            assert env[f"LANDED_{role.upper()}_DEPLOYMENT_NAME"] == f"landed/landed-{role}"


def test_one_build_id_per_release_for_every_role() -> None:
    ids = {wd["spec"]["workerOptions"]["unsafeCustomBuildID"] for wd in _kind("WorkerDeployment")}
    assert ids == {PLACEHOLDER_BUILD_ID}  # set per release, which the workers check


def _duration(text: str) -> timedelta:
    from helpers.crds import _seconds

    return timedelta(seconds=_seconds(text))


def test_rollouts_ramp_and_sunset_after_the_longest_time_cap() -> None:
    for wd in _kind("WorkerDeployment"):
        rollout, sunset = wd["spec"]["rollout"], wd["spec"]["sunset"]
        assert rollout["strategy"] == "Progressive"
        ramps = [s["rampPercentage"] for s in rollout["steps"]]
        assert ramps == sorted(ramps) and len(ramps) >= 2
        # A pinned task may run until its time cap; its version keeps pods until then.
        assert _duration(sunset["scaledownDelay"]) > MAX_TIME_CAP
        assert _duration(sunset["deleteDelay"]) > _duration(sunset["scaledownDelay"])


def test_the_runner_is_gated_by_the_canary_with_its_input_from_a_config_map() -> None:
    gate = _one("WorkerDeployment", "landed-runner")["spec"]["rollout"]["gate"]
    assert gate["workflowType"] == ROLLOUT_GATE_WORKFLOW
    ref = gate["inputFrom"]["configMapKeyRef"]
    data = _one("ConfigMap", ref["name"])["data"][ref["key"]]
    canary = CanaryInput.model_validate(json.loads(data))  # what the gate is given
    # The gate waits for the verifier's new build for longer than the verifier's ramp takes.
    steps = _one("WorkerDeployment", "landed-verifier")["spec"]["rollout"]["steps"]
    ramp = sum((_duration(s["pauseDuration"]) for s in steps), timedelta())
    assert timedelta(seconds=canary.wait_for_verifier_s) > ramp
    for role in ("actor", "verifier"):
        assert "gate" not in _one("WorkerDeployment", f"landed-{role}")["spec"]["rollout"]


def test_each_version_scales_on_backlog_and_slots_and_the_runner_never_to_zero() -> None:
    for wrt in _kind("WorkerResourceTemplate"):
        spec = wrt["spec"]["template"]["spec"]
        assert spec["scaleTargetRef"] == {}  # the controller injects each version's Deployment
        assert spec["minReplicas"] >= 1, wrt["metadata"]["name"]
        names = {
            m[m["type"].lower()]["metric"]["name"]: m[m["type"].lower()]["metric"]
            for m in spec["metrics"]
        }
        assert set(names) == {
            "temporal_approximate_backlog_count",
            "landed_worker_slot_utilization",
        }
        # Present so the controller adds the version's deployment, build and namespace labels.
        assert "matchLabels" in names["temporal_approximate_backlog_count"]["selector"]
    runner = _one("WorkerResourceTemplate", "landed-runner-hpa")["spec"]["template"]["spec"]
    assert runner["minReplicas"] >= 2


def test_the_prometheus_adapter_rules_serve_the_hpa_metrics() -> None:
    rules = yaml.safe_load((K8S.parent / "prometheus-adapter" / "rules.yaml").read_text())
    served = {r["name"]["as"] for group in ("rules", "externalRules") for r in rules[group]}
    assert {"landed_worker_slot_utilization", "temporal_approximate_backlog_count"} <= served


def test_a_worker_takes_the_controllers_build_id_and_deployment_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from landed.temporal.settings import RunnerSettings
    from landed.temporal.versioning import VersioningError, role_version

    monkeypatch.delenv("LANDED_BUILD_ID", raising=False)
    monkeypatch.setenv("TEMPORAL_WORKER_BUILD_ID", "2026.12.04-ab12")
    monkeypatch.setenv("LANDED_RUNNER_DEPLOYMENT_NAME", "landed/landed-runner")
    version = role_version(RunnerSettings())
    assert version is not None
    assert (version.deployment_name, version.build_id) == (
        "landed/landed-runner",
        "2026.12.04-ab12",
    )
    monkeypatch.setenv("TEMPORAL_WORKER_BUILD_ID", PLACEHOLDER_BUILD_ID)
    with pytest.raises(VersioningError, match="placeholder"):
        role_version(RunnerSettings())


def test_the_setup_jobs_reach_only_what_they_set_up() -> None:
    policies = {p["metadata"]["name"]: p for p in _kind("NetworkPolicy")}
    deny = policies["landed-default-deny"]["spec"]["podSelector"]["matchLabels"]
    for name, port in (("landed-ledger-init", 5432), ("landed-search-attributes", 7233)):
        labels = _one("Job", name)["spec"]["template"]["metadata"]["labels"]
        assert deny.items() <= labels.items(), name  # held by the default deny
        rules = policies[name]["spec"]["egress"]
        ports = {p["port"] for r in rules for p in r.get("ports", [])}
        assert ports == {port, 53}, name
    init = policies["landed-ledger-init"]["spec"]["egress"][0]["to"]
    assert init == [{"podSelector": {"matchLabels": {"landed.dev/ledger-db": "true"}}}]
