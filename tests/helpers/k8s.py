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
# Temporal's environment configuration: the settings that carry a client's credential, and those
# that point at one in a file. On Temporal the credential is the identity.
_TEMPORAL_CREDENTIAL_ENV = frozenset(
    {"TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA"}
)
_TEMPORAL_CREDENTIAL_PATHS = ("TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH")
# The label a Temporal credential Secret carries (beside landed.dev/role, its one owner).
CREDENTIAL_LABEL = ("landed.dev/credential", "temporal")

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
    from landed.temporal.role_setup import actor_env_problems

    owners = {
        o["metadata"]["name"]: o["metadata"].get("labels", {}).get("landed.dev/role")
        for o in objs
        if o["kind"] == "Secret"
    }
    problems: list[str] = []
    for role, pod in workloads(objs):
        for name in sorted(secret_refs(pod)):
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


def _stores(objs: list[Doc]) -> dict[tuple[str, str], Doc]:
    return {
        (o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"] in ("Secret", "ConfigMap")
    }


def _env_values(c: Doc, objs: list[Doc]) -> dict[str, str]:
    """A container's environment as far as the manifests say it: envFrom expanded, then env."""
    stores = _stores(objs)
    values: dict[str, str] = {}
    for src in c.get("envFrom", []):
        kind, ref = (
            ("Secret", src["secretRef"])
            if "secretRef" in src
            else ("ConfigMap", src["configMapRef"])
        )
        found = stores.get((kind, ref["name"]), {})
        values.update({**found.get("data", {}), **found.get("stringData", {})})
    values.update({e["name"]: e.get("value", "") for e in c.get("env", [])})
    return values


def temporal_credentials(pod: Doc, objs: list[Doc]) -> set[str]:
    """The Secrets a pod's containers connect to Temporal with, found by what they feed, not by
    their names: TEMPORAL_API_KEY or a client certificate's data from a Secret, a Secret whose
    keys are such settings, a Secret volume mounted where TEMPORAL_TLS_CLIENT_*_PATH points, and
    any Secret labelled as a Temporal credential."""
    stores = _stores(objs)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}

    def labelled(name: str) -> bool:
        labels = stores.get(("Secret", name), {}).get("metadata", {}).get("labels", {})
        return labels.get(CREDENTIAL_LABEL[0]) == CREDENTIAL_LABEL[1]

    def in_volume(vol: Doc) -> set[str]:
        names = {vol["secret"]["secretName"]} if "secret" in vol else set()
        sources = vol.get("projected", {}).get("sources", [])
        return names | {s["secret"]["name"] for s in sources if "secret" in s}

    found = {name for name in secret_refs(pod) if labelled(name)}
    for c in containers(pod):
        for env in c.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref and env["name"] in _TEMPORAL_CREDENTIAL_ENV:
                found.add(ref["name"])
        for src in c.get("envFrom", []):
            name = src.get("secretRef", {}).get("name")
            data = stores.get(("Secret", name or ""), {})
            keys = set(data.get("data", {})) | set(data.get("stringData", {}))
            if keys & _TEMPORAL_CREDENTIAL_ENV:
                found.add(str(name))
        values = _env_values(c, objs)
        paths = [values[p] for p in _TEMPORAL_CREDENTIAL_PATHS if values.get(p)]
        for mount in c.get("volumeMounts", []):
            under = mount["mountPath"].rstrip("/") + "/"
            if any(p.startswith(under) for p in paths):
                found |= in_volume(volumes.get(mount["name"], {}))
    return found


def _credentials_in_the_open(pod: Doc, objs: list[Doc]) -> list[str]:
    """A Temporal credential written in a ConfigMap every role reads, or in the manifest."""
    stores = _stores(objs)
    found: list[str] = []
    for c in containers(pod):
        for src in c.get("envFrom", []):
            name = src.get("configMapRef", {}).get("name")
            keys = set(stores.get(("ConfigMap", name or ""), {}).get("data", {}))
            found += [
                f"reads {k} from ConfigMap {name}" for k in sorted(keys & _TEMPORAL_CREDENTIAL_ENV)
            ]
        found += [
            f"has {e['name']} written in its manifest"
            for e in c.get("env", [])
            if e["name"] in _TEMPORAL_CREDENTIAL_ENV and "value" in e
        ]
    return found


def temporal_credential_problems(objs: list[Doc]) -> list[str]:
    """Where a role that connects to Temporal has no credential Secret of its own, connects with
    another role's, or shares one with another role. Empty when each has its own."""
    owners = {
        o["metadata"]["name"]: o["metadata"].get("labels", {}).get("landed.dev/role")
        for o in objs
        if o["kind"] == "Secret"
    }
    users: dict[str, list[str]] = {}
    problems: list[str] = []
    for role, pod in workloads(objs):
        creds = temporal_credentials(pod, objs)
        connects = any("TEMPORAL_ADDRESS" in _env_values(c, objs) for c in containers(pod))
        problems.extend(f"{role} {where}" for where in _credentials_in_the_open(pod, objs))
        if connects and not creds:
            problems.append(f"{role} connects to Temporal with no credential Secret of its own")
        for name in sorted(creds):
            users.setdefault(name, []).append(role)
            owner = owners.get(name)
            if owner != role:
                whose = f"of the {owner}" if owner else "that no manifest gives a role"
                problems.append(f"{role} connects to Temporal with Secret {name} {whose}")
    for name, roles in sorted(users.items()):
        if len(roles) > 1:
            problems.append(f"{', '.join(sorted(roles))} share the Temporal credential {name}")
    return problems
