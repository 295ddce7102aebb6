"""The deploy/k8s manifests as the tests read them: rendered by kustomize, walked by role."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("dev", "self-hosted", "temporal-cloud")
# Secrets every worker role may mount: its connection to Temporal, no source, key or ledger.
SHARED_SECRETS = frozenset({"landed-temporal-mtls", "landed-temporal-cloud"})

Doc = dict[str, Any]


def tool(name: str) -> str:
    """A tool `make install` (the venv) or `make system-deps` (Debian) puts on this machine."""
    venv = Path(sys.executable).parent / name
    found = str(venv) if venv.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run `make install` and `make system-deps`")
    return found


def render(overlay: str) -> str:
    out = subprocess.run(
        [tool("kubectl"), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def docs(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d]


def workloads(objs: list[Doc]) -> Iterator[tuple[str, Doc]]:
    """(role, pod spec) of every landed Deployment."""
    for obj in objs:
        if obj["kind"] == "Deployment" and obj["metadata"]["name"].startswith("landed-"):
            template = obj["spec"]["template"]
            yield template["metadata"]["labels"]["app.kubernetes.io/component"], template["spec"]


def containers(pod: Doc) -> list[Doc]:
    return list(pod.get("initContainers", [])) + list(pod["containers"])


def secret_refs(pod: Doc) -> set[str]:
    """Every Secret a pod can read: env, envFrom, secret and projected volumes."""
    names: set[str] = set()
    for c in containers(pod):
        for src in c.get("envFrom", []):
            if "secretRef" in src:
                names.add(src["secretRef"]["name"])
        for env in c.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                names.add(ref["name"])
    for vol in pod.get("volumes", []):
        if "secret" in vol:
            names.add(vol["secret"]["secretName"])
        for src in vol.get("projected", {}).get("sources", []):
            if "secret" in src:
                names.add(src["secret"]["name"])
    return names


def env_names(pod: Doc, objs: list[Doc]) -> set[str]:
    """Every environment variable name a pod's containers get (envFrom expanded)."""
    data = {
        (o["kind"], o["metadata"]["name"]): {**o.get("data", {}), **o.get("stringData", {})}
        for o in objs
        if o["kind"] in ("Secret", "ConfigMap")
    }
    names: set[str] = set()
    for c in containers(pod):
        names.update(e["name"] for e in c.get("env", []))
        for src in c.get("envFrom", []):
            kind, ref = (
                ("Secret", src["secretRef"])
                if "secretRef" in src
                else (
                    "ConfigMap",
                    src["configMapRef"],
                )
            )
            names.update(data.get((kind, ref["name"]), {}))
    return names


def separation_problems(objs: list[Doc]) -> list[str]:
    """Where a role's pod can read another role's Secret, or the actor's environment holds a
    source, signing key or ledger URL (DOD-2). Empty when each role sees only its own."""
    from landed.temporal.workers import actor_env_problems

    owners = {
        o["metadata"]["name"]: o["metadata"].get("labels", {}).get("landed.dev/role")
        for o in objs
        if o["kind"] == "Secret"
    }
    problems: list[str] = []
    for role, pod in workloads(objs):
        for name in sorted(secret_refs(pod) - SHARED_SECRETS):
            if name not in owners:
                problems.append(f"{role} reads Secret {name}, which no manifest defines")
            elif owners[name] != role:
                problems.append(f"{role} reads Secret {name} of the {owners[name]}")
        if role == "actor":
            leaked = actor_env_problems(dict.fromkeys(env_names(pod, objs), ""))
            problems.extend(f"actor's environment holds {name}" for name in leaked)
    return problems


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(
        e["operator"] == "In" and labels.get(e["key"]) in e["values"]
        for e in selector.get("matchExpressions", [])
    )


def actor_egress_problems(objs: list[Doc]) -> list[str]:
    """Egress the NetworkPolicies open to the actor towards the ledger database or a verifier
    source, or to everything: any rule with no peer beyond DNS and Temporal's port."""
    actor = next(
        o["spec"]["template"]["metadata"]["labels"]
        for o in objs
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "landed-actor"
    )
    forbidden = ("landed.dev/ledger-db", "landed.dev/verifier-source")
    problems: list[str] = []
    for pol in (o for o in objs if o["kind"] == "NetworkPolicy"):
        if not _selects(pol["spec"]["podSelector"], actor):
            continue
        for rule in pol["spec"].get("egress", []):
            peers = rule.get("to", [])
            ports = {p.get("port") for p in rule.get("ports", [])}
            if not peers and not (ports and ports <= {53, 7233}):
                problems.append(f"{pol['metadata']['name']}: actor egress open to any peer")
            for peer in peers:
                labels = peer.get("podSelector", {}).get("matchLabels", {})
                if "ipBlock" in peer or any(k in labels for k in forbidden):
                    problems.append(f"{pol['metadata']['name']}: actor egress to {peer}")
    return problems
